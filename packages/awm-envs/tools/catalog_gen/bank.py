"""Generate catalog/bank/seed.sql (reference time 2025-06-20T09:00:00Z).

Customer 1 (Daniel Okoro) has a hand-written history the tasks rely on (a
double charge, a run of taxi rides, scheduled transfers); 15 other customers
get seeded random accounts and activity.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 6, 20, 9, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


CUSTOMERS = [
    "Daniel Okoro",
    "Mei Tanaka",
    "Jonas Berg",
    "Alex Chen",
    "Sofia Greco",
    "Alex Chen",
    "Nadia Haddad",
    "Peter Novak",
    "Rosa Jimenez",
    "Tariq Aziz",
    "Helen Park",
    "Luis Ortega",
    "Anna Kowalski",
    "Owen Price",
    "Leila Karimi",
    "Marcus Reid",
]

# Merchants: (name, category, low_cents, high_cents)
FILLER = [
    ("FreshMart", "groceries", 2500, 14000),
    ("Corner Deli", "dining", 900, 2800),
    ("Luigi's Trattoria", "dining", 3200, 9500),
    ("Blue Bottle Coffee", "coffee", 450, 725),
    ("Metro Transit", "transport", 275, 275),
    ("Shell", "transport", 3000, 6500),
    ("Pharma Plus", "health", 800, 4500),
    ("Bookworm", "shopping", 1200, 4800),
    ("CineMax", "entertainment", 1400, 3200),
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250620)
    w = SeedWriter(
        "Personal banking seed data. Reference time 2025-06-20T09:00:00Z; the logged-in customer is 1."
    )

    customers = []
    for i, name in enumerate(CUSTOMERS, start=1):
        local = name.lower().replace(" ", ".") + ("" if i != 6 else ".sf")
        customers.append(
            (
                i,
                name,
                f"{local}@example.com",
                f"+1-555-01{i:02d}",
                ts(REF - timedelta(days=2000 - i * 61)),
            )
        )
    w.add("customers", ("customer_id", "name", "email", "phone", "created_at"), customers)

    accounts = [
        (
            1,
            1,
            "100200301",
            "checking",
            "Everyday Checking",
            243055,
            0,
            "active",
            "2019-04-02T10:00:00Z",
        ),
        (
            2,
            1,
            "100200302",
            "savings",
            "Rainy Day Savings",
            1280000,
            0,
            "active",
            "2019-04-02T10:05:00Z",
        ),
        (
            3,
            1,
            "400377019",
            "credit",
            "Visa Signature",
            -64020,
            500000,
            "active",
            "2021-09-15T12:00:00Z",
        ),
        (4, 1, "100200117", "savings", "Old Savings", 0, 0, "closed", "2016-01-10T09:00:00Z"),
    ]
    acc_id = 5
    others: dict[int, list[int]] = {}
    for cid in range(2, len(CUSTOMERS) + 1):
        others[cid] = []
        for kind in (
            ["checking"] + (["savings"] if cid % 2 else []) + (["credit"] if cid % 5 == 0 else [])
        ):
            bal = -rng.randint(5000, 200000) if kind == "credit" else rng.randint(10000, 3000000)
            status = "frozen" if cid == 9 and kind == "checking" else "active"
            accounts.append(
                (
                    acc_id,
                    cid,
                    f"{200000000 + acc_id * 7919}",
                    kind,
                    f"{kind.title()} account",
                    bal,
                    300000 if kind == "credit" else 0,
                    status,
                    ts(REF - timedelta(days=rng.randint(200, 2500))),
                )
            )
            others[cid].append(acc_id)
            acc_id += 1
    w.add(
        "accounts",
        (
            "account_id",
            "customer_id",
            "account_number",
            "type",
            "nickname",
            "balance_cents",
            "credit_limit_cents",
            "status",
            "opened_at",
        ),
        accounts,
    )

    payees = [
        (1, 1, "Greenway Properties", "771002345", "First Harbor Bank", "2022-08-01T10:00:00Z"),
        (2, 1, "City Power & Light", "900112233", "Metro Commerce Bank", "2022-08-03T10:00:00Z"),
        (3, 1, "Alex Chen", "310555872", "Coastal Credit Union", "2023-02-14T10:00:00Z"),
        (4, 1, "Maria Santos", "620448190", "First Harbor Bank", "2024-05-20T10:00:00Z"),
    ]
    pid = 5
    for cid in range(2, len(CUSTOMERS) + 1):
        for k in range(rng.randint(1, 2)):
            payees.append(
                (
                    pid,
                    cid,
                    rng.choice(CUSTOMERS[1:]) if k else "Landlord LLC",
                    f"{500000000 + pid * 104729}",
                    "Metro Commerce Bank",
                    ts(REF - timedelta(days=rng.randint(30, 900))),
                )
            )
            pid += 1
    w.add(
        "payees",
        ("payee_id", "customer_id", "name", "account_number", "bank_name", "created_at"),
        payees,
    )

    transfers = [
        (1, 2, 1, None, 50000, "Top up checking", "completed", None, "2025-04-18T08:00:00Z"),
        (2, 1, 2, None, 20000, "Monthly savings", "completed", None, "2025-05-30T08:00:00Z"),
        (3, 1, None, 1, 185000, "June rent", "completed", None, "2025-06-01T07:00:00Z"),
        (4, 1, None, 3, 4500, "Concert tickets", "completed", None, "2025-06-07T19:30:00Z"),
        (
            5,
            1,
            2,
            None,
            20000,
            "Monthly savings",
            "scheduled",
            "2025-06-30T08:00:00Z",
            "2025-06-02T08:00:00Z",
        ),
        (
            6,
            1,
            None,
            1,
            185000,
            "July rent",
            "scheduled",
            "2025-07-01T07:00:00Z",
            "2025-06-10T09:00:00Z",
        ),
        (
            7,
            1,
            None,
            4,
            12000,
            "Dinner split",
            "cancelled",
            "2025-06-05T12:00:00Z",
            "2025-06-01T12:00:00Z",
        ),
    ]
    tid = 8
    for accs in others.values():
        if len(accs) > 1 and rng.random() < 0.7:
            transfers.append(
                (
                    tid,
                    accs[0],
                    accs[1],
                    None,
                    rng.randint(5, 80) * 1000,
                    "Savings",
                    "completed",
                    None,
                    ts(REF - timedelta(days=rng.randint(1, 90))),
                )
            )
            tid += 1
    w.add(
        "transfers",
        (
            "transfer_id",
            "from_account_id",
            "to_account_id",
            "payee_id",
            "amount_cents",
            "memo",
            "status",
            "scheduled_for",
            "created_at",
        ),
        transfers,
    )

    txns: list[tuple] = []

    def tx(
        account: int,
        when: datetime,
        amount: int,
        merchant: str,
        category: str,
        desc: str = "",
        transfer: int | None = None,
    ) -> None:
        txns.append((len(txns) + 1, account, transfer, ts(when), amount, merchant, category, desc))

    # Customer 1, checking: pay days, rent, bills, groceries, coffee, subscriptions
    for month in (3, 4, 5, 6):
        for day in (1, 15):
            if datetime(2025, month, day, 6) < REF:
                tx(
                    1,
                    datetime(2025, month, day, 6, 0),
                    420000,
                    "Acme Robotics Payroll",
                    "income",
                    "Salary",
                )
        if month < 6:
            tx(1, datetime(2025, month, 1, 7, 0), -185000, "Greenway Properties", "housing", "Rent")
        tx(
            1,
            datetime(2025, month, 9, 10, 0),
            -rng.randint(9000, 14000),
            "City Power & Light",
            "utilities",
            "Electricity",
        )
        tx(1, datetime(2025, month, 3, 2, 0), -1599, "StreamFlix", "subscriptions", "Monthly plan")
        tx(1, datetime(2025, month, 4, 2, 0), -299, "CloudBox", "subscriptions", "Storage plan")
        for week in range(4):
            day = 2 + week * 7
            if datetime(2025, month, day, 18) < REF:
                tx(
                    1,
                    datetime(2025, month, day, 18, 30),
                    -rng.randint(4500, 13000),
                    "FreshMart",
                    "groceries",
                    "Groceries",
                )
    tx(
        1,
        datetime(2025, 6, 1, 7, 0),
        -185000,
        "Greenway Properties",
        "housing",
        "June rent",
        transfer=3,
    )
    tx(
        1,
        datetime(2025, 6, 7, 19, 30),
        -4500,
        "Alex Chen",
        "transfer",
        "Concert tickets",
        transfer=4,
    )
    tx(
        2,
        datetime(2025, 4, 18, 8, 0),
        -50000,
        "Transfer to Everyday Checking",
        "transfer",
        "Top up checking",
        transfer=1,
    )
    tx(
        1,
        datetime(2025, 4, 18, 8, 0),
        50000,
        "Transfer from Rainy Day Savings",
        "transfer",
        "Top up checking",
        transfer=1,
    )
    tx(
        1,
        datetime(2025, 5, 30, 8, 0),
        -20000,
        "Transfer to Rainy Day Savings",
        "transfer",
        "Monthly savings",
        transfer=2,
    )
    tx(
        2,
        datetime(2025, 5, 30, 8, 0),
        20000,
        "Transfer from Everyday Checking",
        "transfer",
        "Monthly savings",
        transfer=2,
    )
    for m, d in ((3, 31), (4, 30), (5, 31)):
        tx(
            2,
            datetime(2025, m, d, 23, 0),
            rng.randint(900, 1300),
            "Interest",
            "income",
            "Monthly interest",
        )
    # Blue Bottle Coffee, split between debit (checking) and the credit card
    coffee = [
        (1, datetime(2025, 5, 2, 8, 10), -575),
        (1, datetime(2025, 5, 6, 8, 5), -450),
        (3, datetime(2025, 5, 9, 9, 0), -725),
        (1, datetime(2025, 5, 14, 8, 20), -575),
        (3, datetime(2025, 5, 21, 8, 45), -650),
        (1, datetime(2025, 5, 28, 8, 15), -475),
        (1, datetime(2025, 4, 29, 8, 0), -575),
        (1, datetime(2025, 6, 2, 8, 0), -575),
        (3, datetime(2025, 6, 11, 8, 30), -650),
    ]
    for acct, when, amount in coffee:
        tx(acct, when, amount, "Blue Bottle Coffee", "coffee", "Coffee")
    # Credit card: restaurants, travel, the Northwind double charge, a run of QuickCab rides
    for m in (3, 4, 5, 6):
        for _ in range(4):
            when = datetime(2025, m, rng.randint(1, 28), rng.randint(11, 22), rng.randint(0, 59))
            if when < REF:
                merchant, category, lo, hi = rng.choice(FILLER)
                tx(3, when, -rng.randint(lo, hi), merchant, category)
    tx(
        3,
        datetime(2025, 5, 20, 15, 0),
        80000,
        "Payment from Everyday Checking",
        "transfer",
        "Card payment",
    )
    tx(
        3,
        datetime(2025, 6, 12, 14, 2),
        -18999,
        "Northwind Electronics",
        "shopping",
        "Wireless headphones",
    )
    tx(
        3,
        datetime(2025, 6, 12, 14, 3),
        -18999,
        "Northwind Electronics",
        "shopping",
        "Wireless headphones",
    )
    tx(3, datetime(2025, 4, 22, 16, 0), -6499, "Northwind Electronics", "shopping", "Keyboard")
    rides = [
        (1, -1850),
        (2, -4725),
        (3, -2290),
        (4, -1575),
        (5, -5210),
        (6, -3980),
        (8, -4100),
        (9, -2645),
        (10, -6330),
        (12, -1990),
        (13, -3120),
        (16, -4480),
        (18, -2860),
    ]
    for day, amount in rides:
        tx(3, datetime(2025, 6, day, 23, 15), amount, "QuickCab", "transport", "Ride")
    tx(3, datetime(2025, 5, 30, 23, 40), -5600, "QuickCab", "transport", "Ride")
    # Other customers
    for accs in others.values():
        for _ in range(rng.randint(5, 9)):
            merchant, category, lo, hi = rng.choice(FILLER)
            tx(
                accs[0],
                REF - timedelta(days=rng.randint(1, 100), minutes=rng.randint(0, 900)),
                -rng.randint(lo, hi),
                merchant,
                category,
            )
        tx(
            accs[0],
            datetime(2025, 6, 1, 6, 0),
            rng.randint(200000, 500000),
            "Payroll",
            "income",
            "Salary",
        )
    txns.sort(key=lambda t: (t[3], t[1]))
    txns = [(i, *t[1:]) for i, t in enumerate(txns, start=1)]
    w.add(
        "transactions",
        (
            "transaction_id",
            "account_id",
            "transfer_id",
            "posted_at",
            "amount_cents",
            "merchant",
            "category",
            "description",
        ),
        txns,
    )

    cards = [
        (1, 1, "4821", "debit", "active", "2027-08", 150000, None),
        (2, 3, "9034", "credit", "active", "2028-01", 300000, None),
        (3, 1, "1177", "debit", "expired", "2024-08", 100000, None),
    ]
    card_id = 4
    for accs in others.values():
        for a in accs:
            kind = "credit" if any(x[0] == a and x[3] == "credit" for x in accounts) else "debit"
            if kind == "debit" and a != accs[0]:
                continue
            cards.append(
                (
                    card_id,
                    a,
                    f"{rng.randint(0, 9999):04d}",
                    kind,
                    rng.choice(["active"] * 5 + ["locked"]),
                    f"202{rng.randint(6, 9)}-{rng.randint(1, 12):02d}",
                    200000,
                    None,
                )
            )
            card_id += 1
    w.add(
        "cards",
        (
            "card_id",
            "account_id",
            "last4",
            "type",
            "status",
            "expires",
            "daily_limit_cents",
            "replaces_card_id",
        ),
        cards,
    )

    budgets = [(1, 1, "groceries", 50000), (2, 1, "dining", 25000), (3, 1, "entertainment", 10000)]
    bid = 4
    for cid in range(2, len(CUSTOMERS) + 1, 2):
        for cat in rng.sample(["groceries", "dining", "transport", "shopping"], 2):
            budgets.append((bid, cid, cat, rng.randint(10, 60) * 1000))
            bid += 1
    w.add("budgets", ("budget_id", "customer_id", "category", "monthly_limit_cents"), budgets)

    first_cab = next(
        t[0] for t in txns if t[1] == 3 and t[5] == "QuickCab" and t[3].startswith("2025-05")
    )
    disputes = [(1, first_cab, "Driver took a long detour", "resolved", "2025-06-02T10:00:00Z")]
    did = 2
    for t in txns:
        if t[1] > 4 and t[4] < -8000 and did < 6:
            disputes.append(
                (
                    did,
                    t[0],
                    "Did not receive goods",
                    rng.choice(["open", "rejected", "resolved"]),
                    t[3],
                )
            )
            did += 1
    w.add("disputes", ("dispute_id", "transaction_id", "reason", "status", "created_at"), disputes)

    alerts = [(1, 1, "low_balance", 20000, 1), (2, 3, "large_transaction", 50000, 0)]
    aid = 3
    for accs in others.values():
        if rng.random() < 0.5:
            alerts.append((aid, accs[0], "low_balance", rng.randint(5, 50) * 1000, 1))
            aid += 1
    w.add("alerts", ("alert_id", "account_id", "kind", "threshold_cents", "is_enabled"), alerts)
    return w


def main() -> None:
    w = build()
    path = w.write("bank")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
