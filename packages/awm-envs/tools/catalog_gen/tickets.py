"""Generate catalog/tickets/seed.sql (reference time 2025-11-03T15:00:00Z).

Customer 1 (Jordan Blake) has a hand-written ticket history the tasks rely on:
seats for a tour that plays two cities under the same name, a theatre night
inside the 7-day refund cut-off, a cancelled comedy show, non-refundable stadium
seats, a gala order with one ticket given away and one transfer pending, and an
incoming transfer from a friend. 32 other customers fill the venues, selling
some tiers out.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 11, 3, 15, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def seat_label(code: str, n: int) -> str:
    """The n-th seat (1-based) sold in a tier; the app assigns seats the same way."""
    return f"{code} Row {chr(ord('A') + (n - 1) // 10)} Seat {(n - 1) % 10 + 1}"


def barcode(ticket_id: int) -> str:
    return f"TX{ticket_id:05d}{(ticket_id * 7919) % 10000:04d}"


CUSTOMERS = [
    "Jordan Blake",
    "Maria Lopez",
    "Chris Park",
    "Aiden Walsh",
    "Riley Chen",
    "Noor Hassan",
    "Casey Morgan",
    "Ethan Brooks",
    "Lena Fischer",
    "Chris Park",
    "Omar Said",
    "Priya Nair",
    "Tom Becker",
    "Yuki Mori",
    "Sara Lindqvist",
    "Mateo Gomez",
    "Ava Thompson",
    "Jonas Weber",
    "Kofi Asante",
    "Mila Novak",
    "Ravi Patel",
    "Elena Rossi",
    "Sean Doyle",
    "Hana Kim",
    "Lucas Martin",
    "Zara Ahmed",
    "Nils Holm",
    "Ivy Chang",
    "Diego Alvarez",
    "Grace Obi",
    "Felix Wagner",
    "Rosa Mendes",
    "Ben Foster",
]

VENUES = [
    (1, "Harbor Arena", "Seattle", "401 Pier Way, Seattle, WA"),
    (2, "The Lyric Theatre", "Seattle", "88 Pine St, Seattle, WA"),
    (3, "Cascade Stadium", "Seattle", "1200 Stadium Dr, Seattle, WA"),
    (4, "Blue Room Comedy Club", "Seattle", "17 Union St, Seattle, WA"),
    (5, "Riverside Amphitheater", "Portland", "900 River Rd, Portland, OR"),
    (6, "Rose Hall", "Portland", "33 Rose Ave, Portland, OR"),
]

# (section_id, venue_id, code, name, seat_count)
SECTIONS = [
    (1, 1, "FLR", "Floor (standing)", 2000),
    (2, 1, "100", "Lower Bowl", 6000),
    (3, 1, "300", "Upper Bowl", 8000),
    (4, 2, "ORC", "Orchestra", 600),
    (5, 2, "MEZ", "Mezzanine", 400),
    (6, 2, "BAL", "Balcony", 300),
    (7, 3, "FLD", "Field Level", 12000),
    (8, 3, "CLB", "Club Level", 3000),
    (9, 3, "UPD", "Upper Deck", 20000),
    (10, 4, "FRT", "Front Tables", 60),
    (11, 4, "BCK", "Back Tables", 90),
    (12, 5, "PIT", "Pit", 1500),
    (13, 5, "RES", "Reserved", 4000),
    (14, 5, "LWN", "Lawn", 6000),
    (15, 6, "STL", "Stalls", 900),
    (16, 6, "CIR", "Circle", 500),
]

# (event_id, venue, name, performer, category, starts_at, status, max_per_customer,
#  {section_id: (price_cents, quantity, refundable)})
EVENTS = [
    (
        1,
        1,
        "Nova Lights - Aurora Tour",
        "Nova Lights",
        "concert",
        "2025-11-21T20:00:00Z",
        "scheduled",
        4,
        {1: (14500, 30, 1), 2: (9500, 40, 1), 3: (5500, 40, 1)},
    ),
    (
        2,
        2,
        "The Clockmaker's Daughter",
        "Lyric Repertory Company",
        "theatre",
        "2025-11-08T19:30:00Z",
        "scheduled",
        6,
        {4: (12000, 30, 1), 5: (8000, 30, 1), 6: (4500, 30, 1)},
    ),
    (
        3,
        3,
        "Seattle Orcas vs Portland Pines",
        "Seattle Orcas",
        "sports",
        "2025-11-15T18:00:00Z",
        "scheduled",
        8,
        {7: (8800, 40, 0), 8: (12500, 30, 0), 9: (3500, 50, 0)},
    ),
    (
        4,
        4,
        "Laugh Riot with Dee Moreno",
        "Dee Moreno",
        "comedy",
        "2025-11-14T21:00:00Z",
        "cancelled",
        6,
        {10: (4000, 20, 0), 11: (2500, 30, 0)},
    ),
    (
        5,
        2,
        "Jazz at the Lyric: Marcus Hale Quartet",
        "Marcus Hale Quartet",
        "concert",
        "2025-12-05T20:00:00Z",
        "scheduled",
        6,
        {4: (8500, 30, 1), 5: (6000, 30, 1), 6: (3500, 20, 1)},
    ),
    (
        6,
        2,
        "Jazz at the Lyric: Marcus Hale Quartet",
        "Marcus Hale Quartet",
        "concert",
        "2025-12-06T20:00:00Z",
        "scheduled",
        6,
        {4: (8500, 30, 1), 5: (4500, 30, 1), 6: (3500, 20, 1)},
    ),
    (
        7,
        6,
        "Winter Symphony Gala",
        "Portland Symphony Orchestra",
        "concert",
        "2025-12-20T19:00:00Z",
        "scheduled",
        8,
        {15: (9000, 40, 1), 16: (7000, 40, 1)},
    ),
    (
        8,
        4,
        "Indie Night: Velvet Static",
        "Velvet Static",
        "concert",
        "2025-10-10T20:00:00Z",
        "scheduled",
        6,
        {10: (3000, 20, 0), 11: (2000, 30, 0)},
    ),
    (
        9,
        5,
        "Nova Lights - Aurora Tour",
        "Nova Lights",
        "concert",
        "2025-11-23T20:00:00Z",
        "scheduled",
        4,
        {12: (13500, 30, 1), 13: (8500, 40, 1), 14: (4500, 50, 1)},
    ),
    (
        10,
        5,
        "Ember & Ash",
        "Ember & Ash",
        "concert",
        "2025-11-28T19:00:00Z",
        "scheduled",
        6,
        {12: (8000, 30, 1), 13: (6500, 40, 1), 14: (3500, 40, 1)},
    ),
    (
        11,
        4,
        "Improv Jam",
        "The Blue Room Players",
        "comedy",
        "2025-11-20T20:00:00Z",
        "scheduled",
        6,
        {10: (3500, 20, 1), 11: (2500, 30, 1)},
    ),
    (
        12,
        3,
        "Portland Pines vs Tacoma Tide",
        "Portland Pines",
        "sports",
        "2025-11-29T18:00:00Z",
        "scheduled",
        8,
        {7: (7500, 40, 0), 8: (11000, 30, 0), 9: (3000, 50, 0)},
    ),
    (
        13,
        6,
        "A Midsummer Night's Dream",
        "Rose Hall Players",
        "theatre",
        "2025-11-12T19:00:00Z",
        "scheduled",
        6,
        {15: (6500, 30, 1), 16: (4500, 30, 1)},
    ),
    (
        14,
        1,
        "Hollow Coast - Tides Tour",
        "Hollow Coast",
        "concert",
        "2025-12-12T20:00:00Z",
        "scheduled",
        6,
        {1: (9900, 30, 1), 2: (7900, 40, 1), 3: (4900, 40, 1)},
    ),
    (
        15,
        4,
        "Comedy Open Mic",
        "Various",
        "comedy",
        "2025-11-06T20:00:00Z",
        "scheduled",
        4,
        {10: (1500, 20, 1), 11: (1000, 30, 1)},
    ),
    (
        16,
        3,
        "Seattle Orcas vs Boise Bears",
        "Seattle Orcas",
        "sports",
        "2025-11-30T18:00:00Z",
        "postponed",
        8,
        {7: (8000, 40, 0), 8: (12000, 30, 0), 9: (3000, 50, 0)},
    ),
    (
        17,
        2,
        "The Nutcracker",
        "Emerald Ballet",
        "theatre",
        "2025-12-13T14:00:00Z",
        "scheduled",
        8,
        {4: (11000, 30, 1), 5: (7500, 30, 1), 6: (4000, 30, 1)},
    ),
    (
        18,
        4,
        "Lo-Fi Lounge Sessions",
        "DJ Mellow",
        "concert",
        "2025-12-03T21:00:00Z",
        "scheduled",
        6,
        {10: (2500, 20, 1), 11: (1800, 30, 1)},
    ),
    (
        19,
        5,
        "Riverside Beer & Blues",
        "Various",
        "concert",
        "2025-09-20T17:00:00Z",
        "scheduled",
        6,
        {13: (5000, 40, 0), 14: (3000, 50, 0)},
    ),
    (
        20,
        6,
        "Beethoven's Ninth",
        "Portland Symphony Orchestra",
        "concert",
        "2026-01-17T19:30:00Z",
        "scheduled",
        8,
        {15: (9500, 40, 1), 16: (6500, 40, 1)},
    ),
]
SALES_START = {20: "2025-11-10T10:00:00Z"}
SOLD_OUT = {(1, 1), (6, 6), (3, 8), (10, 12)}  # (event, section)


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20251103)
    w = SeedWriter(
        "Event ticketing seed data. Reference time 2025-11-03T15:00:00Z; the logged-in customer is 1."
    )
    customers = []
    for i, name in enumerate(CUSTOMERS, start=1):
        local = name.lower().replace(" ", ".") + ("2" if i == 10 else "")
        customers.append(
            (i, name, f"{local}@mail.example", ts(REF - timedelta(days=1500 - i * 37)))
        )
    w.add("customers", ("customer_id", "name", "email", "created_at"), customers)
    w.add("venues", ("venue_id", "name", "city", "address"), VENUES)
    w.add("sections", ("section_id", "venue_id", "code", "name", "seat_count"), SECTIONS)

    events, tiers = [], []
    tier_of: dict[
        tuple[int, int], tuple[int, int, int, int]
    ] = {}  # -> tier_id, price, qty, refundable
    code_of = {s[0]: s[2] for s in SECTIONS}
    name_of = {s[0]: s[3] for s in SECTIONS}
    for e in EVENTS:
        eid, venue, name, performer, cat, starts, status, cap, tier_spec = e
        start = datetime.strptime(starts, "%Y-%m-%dT%H:%M:%SZ")
        sales = SALES_START.get(eid) or ts(start - timedelta(days=90))
        events.append((eid, venue, name, performer, cat, starts, sales, status, cap))
        for sid, (price, qty, refundable) in tier_spec.items():
            tid = len(tiers) + 1
            tiers.append((tid, eid, sid, name_of[sid], price, qty, refundable))
            tier_of[(eid, sid)] = (tid, price, qty, refundable)
    w.add(
        "events",
        (
            "event_id",
            "venue_id",
            "name",
            "performer",
            "category",
            "starts_at",
            "sales_start_at",
            "status",
            "max_per_customer",
        ),
        events,
    )
    w.add(
        "ticket_tiers",
        ("tier_id", "event_id", "section_id", "name", "price_cents", "quantity", "refundable"),
        tiers,
    )

    promos = [
        [1, "GALA20", 7, 20, "2025-10-01T00:00:00Z", "2025-12-19T23:59:59Z", 200, 0],
        [2, "VIP30", 7, 30, "2025-10-01T00:00:00Z", "2025-12-19T23:59:59Z", 4, 0],
        [3, "FALL10", None, 10, "2025-09-01T00:00:00Z", "2025-10-31T23:59:59Z", 500, 0],
        [4, "JAZZ15", 5, 15, "2025-10-15T00:00:00Z", "2025-12-04T23:59:59Z", 100, 0],
        [5, "HOLIDAY25", 17, 25, "2025-12-01T00:00:00Z", "2025-12-12T23:59:59Z", 100, 0],
    ]

    orders: list[tuple] = []
    tickets: list[tuple] = []
    transfers: list[tuple] = []
    refunds: list[tuple] = []
    sold: dict[int, int] = {}  # tier_id -> seats issued

    def order(
        customer: int,
        event: int,
        section: int,
        qty: int,
        when: datetime,
        promo: int | None = None,
        statuses: list[str] | None = None,
        names: list[str | None] | None = None,
    ) -> tuple[int, list[int]]:
        tid, price, _, _ = tier_of[(event, section)]
        oid = len(orders) + 1
        subtotal = price * qty
        pct = promos[promo - 1][3] if promo else 0
        discount = subtotal * pct // 100
        paid = (subtotal - discount) // qty
        if promo:
            promos[promo - 1][7] += 1
        ids = []
        for k in range(qty):
            sold[tid] = sold.get(tid, 0) + 1
            ticket_id = len(tickets) + 1
            status = statuses[k] if statuses else "valid"
            name = names[k] if names else None
            tickets.append(
                [
                    ticket_id,
                    oid,
                    tid,
                    customer,
                    seat_label(code_of[section], sold[tid]),
                    paid,
                    name,
                    status,
                    barcode(ticket_id),
                ]
            )
            ids.append(ticket_id)
        refunded = [t for t in ids if tickets[t - 1][7] == "refunded"]
        status = (
            "paid"
            if not refunded
            else ("refunded" if len(refunded) == qty else "partially_refunded")
        )
        orders.append(
            (oid, customer, event, promo, status, subtotal, discount, subtotal - discount, ts(when))
        )
        for t in refunded:
            refunds.append(
                (len(refunds) + 1, oid, t, paid, "Customer request", ts(when + timedelta(days=3)))
            )
        return oid, ids

    # Jordan's history (orders 1-9)
    order(1, 1, 2, 2, datetime(2025, 8, 24, 10, 5), names=["Jordan Blake", None])
    order(1, 2, 4, 2, datetime(2025, 9, 30, 19, 0))
    order(1, 4, 10, 2, datetime(2025, 10, 2, 12, 0))
    order(1, 8, 11, 1, datetime(2025, 9, 12, 9, 30), statuses=["used"])
    _, gala = order(
        1,
        7,
        16,
        4,
        datetime(2025, 10, 8, 18, 0),
        promo=1,
        names=["Jordan Blake", "Dana Blake", None, None],
    )
    order(1, 3, 9, 2, datetime(2025, 10, 1, 8, 0))
    order(1, 10, 13, 2, datetime(2025, 10, 12, 21, 0))
    order(1, 11, 11, 1, datetime(2025, 10, 20, 13, 0))
    order(1, 13, 15, 2, datetime(2025, 9, 5, 16, 0), statuses=["refunded", "refunded"])
    # one gala ticket given to Lena Fischer (accepted), one pending to a non-customer
    tickets[gala[2] - 1][3] = 9
    transfers.append(
        (
            1,
            gala[2],
            1,
            "lena.fischer@mail.example",
            9,
            "accepted",
            "2025-10-09T10:00:00Z",
            "2025-10-09T18:30:00Z",
        )
    )
    tickets[gala[3] - 1][7] = "transfer_pending"
    transfers.append(
        (2, gala[3], 1, "sam.ortiz@mail.example", None, "pending", "2025-11-01T09:00:00Z", None)
    )

    # Riley Chen sends Jordan a Club Level seat for the Orcas game
    _, riley = order(5, 3, 8, 2, datetime(2025, 9, 20, 11, 0))
    tickets[riley[1] - 1][7] = "transfer_pending"
    transfers.append(
        (3, riley[1], 5, "jordan.blake@mail.example", 1, "pending", "2025-11-02T20:15:00Z", None)
    )

    # everyone else
    others = list(range(2, len(CUSTOMERS) + 1))
    for e in EVENTS:
        eid, starts, status = e[0], e[5], e[6]
        start = datetime.strptime(starts, "%Y-%m-%dT%H:%M:%SZ")
        if eid == 20:
            continue  # sales not open yet
        for sid in e[8]:
            tid, _, qty, _ = tier_of[(eid, sid)]
            target = qty if (eid, sid) in SOLD_OUT else rng.randint(qty // 5, qty * 3 // 5)
            while sold.get(tid, 0) < target:
                n = min(rng.randint(1, 4), target - sold.get(tid, 0), e[7])
                customer = rng.choice(others)
                when = min(
                    start - timedelta(days=rng.randint(2, 80)),
                    REF - timedelta(days=rng.randint(1, 30)),
                )
                promo = None
                if eid == 7 and promos[1][7] < promos[1][6] and rng.random() < 0.5:
                    promo = 2
                elif eid == 7 and rng.random() < 0.4:
                    promo = 1
                past = start < REF
                statuses = ["used" if past else "valid"] * n
                refunded = (eid, sid) not in SOLD_OUT and rng.random() < 0.08
                if refunded or (status == "cancelled" and rng.random() < 0.5):
                    statuses = ["refunded"] * n
                order(customer, eid, sid, n, when, promo=promo, statuses=statuses)

    w.add(
        "promo_codes",
        (
            "promo_id",
            "code",
            "event_id",
            "percent_off",
            "valid_from",
            "valid_until",
            "max_uses",
            "used_count",
        ),
        [tuple(p) for p in promos],
    )
    w.add(
        "orders",
        (
            "order_id",
            "customer_id",
            "event_id",
            "promo_id",
            "status",
            "subtotal_cents",
            "discount_cents",
            "total_cents",
            "created_at",
        ),
        orders,
    )
    w.add(
        "tickets",
        (
            "ticket_id",
            "order_id",
            "tier_id",
            "holder_customer_id",
            "seat_label",
            "price_paid_cents",
            "attendee_name",
            "status",
            "barcode",
        ),
        [tuple(t) for t in tickets],
    )
    w.add(
        "transfers",
        (
            "transfer_id",
            "ticket_id",
            "from_customer_id",
            "to_email",
            "to_customer_id",
            "status",
            "created_at",
            "resolved_at",
        ),
        transfers,
    )
    w.add(
        "refunds",
        ("refund_id", "order_id", "ticket_id", "amount_cents", "reason", "created_at"),
        refunds,
    )
    return w


def main() -> None:
    w = build()
    path = w.write("tickets")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
