"""Generate catalog/rentals/seed.sql (reference time 2025-07-14T09:00:00Z).

Renter 1 (Sofia Alvarez) rents unit 3B at Maple Court until 2025-08-31 and is
looking for her next place: July's rent is unpaid and past the grace period, a
faucet repair is open, she has viewings booked, one pending and one rejected
application, and a few saved listings. The listings in Mueller, East Austin and
Hyde Park are hand-written (the tasks search them); Downtown and South Congress
get seeded filler, and 29 other renters book viewings, apply, save and pay rent.
"""

from __future__ import annotations

import random
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 7, 14, 9, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


USERS = [
    "Sofia Alvarez",
    "Liam Turner",
    "Ava Patel",
    "Noah Kim",
    "Emma Rossi",
    "Lucas Meyer",
    "Mia Johnson",
    "Ethan Brown",
    "Olivia Nguyen",
    "Mason Clark",
    "Isabella Diaz",
    "Logan Wright",
    "Sophia Lee",
    "Jacob Hall",
    "Amelia Young",
    "Daniel Allen",
    "Harper King",
    "Henry Scott",
    "Ella Green",
    "Jack Baker",
    "Grace Adams",
    "Owen Nelson",
    "Chloe Hill",
    "Samuel Moore",
    "Lily Carter",
    "David Reed",
    "Zoe Cook",
    "Ryan Bell",
    "Nora Ward",
    "Liam Turner",
]

LANDLORDS = [
    (1, "Greenleaf Property Management", "leasing@greenleaf.example", "+1-512-555-0101"),
    (2, "Mueller Living LLC", "hello@muellerliving.example", "+1-512-555-0102"),
    (3, "Barton Homes", "rent@bartonhomes.example", "+1-512-555-0103"),
    (4, "Chen & Ortiz Realty", "office@chenortiz.example", "+1-512-555-0104"),
    (5, "Hyde Park Rentals", "team@hpr.example", "+1-512-555-0105"),
    (6, "Capitol Urban Residences", "leasing@capitolurban.example", "+1-512-555-0106"),
]

# (property_id, landlord, name, address, neighborhood, pets, parking)
PROPERTIES = [
    (1, 1, "Maple Court", "2100 E 12th St", "East Austin", 1, 1),
    (2, 2, "Mueller Commons", "1800 Aldrich St", "Mueller", 1, 1),
    (3, 2, "Aldrich Flats", "1950 Aldrich St", "Mueller", 1, 0),
    (4, 3, "Lakeside Rows", "4200 Berkman Dr", "Mueller", 0, 1),
    (5, 1, "Riverside Lofts", "1100 Cesar Chavez St", "East Austin", 1, 1),
    (6, 4, "Chicon Court", "900 Chicon St", "East Austin", 0, 0),
    (7, 5, "Elm Terrace", "4400 Avenue F", "Hyde Park", 1, 0),
    (8, 5, "Duval House", "4300 Duval St", "Hyde Park", 1, 1),
    (9, 6, "Cedar Loft", "300 W 5th St", "Downtown", 0, 1),
    (10, 3, "The Willows", "1500 S Congress Ave", "South Congress", 1, 1),
    (11, 4, "The Willows", "4500 Speedway", "Hyde Park", 0, 0),
    (12, 6, "Congress Tower", "700 Congress Ave", "Downtown", 1, 1),
    (13, 3, "Bouldin Flats", "800 W Mary St", "South Congress", 0, 1),
    (14, 6, "Rainey Point", "70 Rainey St", "Downtown", 0, 1),
]

# key: (property, unit, beds, baths, sqft, rent_cents, available_from, status, listed_on)
LISTINGS = {
    "mc_2a": (1, "2A", 1, 1.0, 640, 145000, "2025-08-01", "active", "2025-07-02"),
    "mc_4c": (1, "4C", 1, 1.0, 660, 148000, "2025-08-15", "active", "2025-07-06"),
    "mu_101": (2, "101", 2, 2.0, 980, 215000, "2025-08-01", "active", "2025-07-10"),
    "mu_204": (2, "204", 2, 1.0, 910, 205000, "2025-08-15", "active", "2025-07-08"),
    "mu_310": (2, "310", 2, 2.0, 1010, 219500, "2025-09-01", "active", "2025-07-05"),
    "mu_402": (2, "402", 2, 2.0, 1100, 235000, "2025-08-01", "active", "2025-07-09"),
    "mu_105": (2, "105", 2, 1.0, 900, 195000, "2025-07-15", "rented", "2025-05-20"),
    "af_a2": (3, "A2", 2, 1.0, 880, 197500, "2025-08-01", "active", "2025-06-20"),
    "af_b4": (3, "B4", 2, 1.5, 930, 210000, "2025-07-20", "active", "2025-07-01"),
    "af_c1": (3, "C1", 3, 2.0, 1200, 218000, "2025-08-01", "active", "2025-06-28"),
    "af_c3": (3, "C3", 2, 2.0, 960, 212000, "2025-08-20", "active", "2025-06-25"),
    "af_d2": (3, "D2", 2, 1.0, 890, 200000, "2025-09-15", "active", "2025-07-11"),
    "lr_12": (4, "12", 2, 1.0, 870, 190000, "2025-08-01", "active", "2025-07-03"),
    "rl_105": (5, "105", 1, 1.0, 700, 139500, "2025-08-01", "active", "2025-06-30"),
    "rl_210": (5, "210", 1, 1.0, 720, 152000, "2025-08-01", "active", "2025-07-07"),
    "rl_300": (5, "300", 1, 1.0, 690, 135000, "2025-08-01", "withdrawn", "2025-06-10"),
    "rl_2b": (5, "2B", 2, 2.0, 1050, 198000, "2025-09-01", "active", "2025-06-15"),
    "cc_7": (6, "7", 1, 1.0, 600, 129500, "2025-08-01", "active", "2025-07-04"),
    "et_1": (7, "1", 1, 1.0, 620, 160000, "2025-08-01", "active", "2025-06-01"),
    "et_5": (7, "5", 1, 1.0, 650, 172500, "2025-08-15", "active", "2025-07-02"),
    "dh_2": (8, "2", 1, 1.0, 610, 165000, "2025-08-01", "active", "2025-06-26"),
    "dh_4": (8, "4", 1, 1.0, 700, 185000, "2025-08-01", "active", "2025-07-05"),
    "dh_6": (8, "6", 2, 1.0, 900, 210000, "2025-09-01", "active", "2025-07-08"),
    "wh_3": (11, "3", 1, 1.0, 580, 150000, "2025-08-01", "active", "2025-07-01"),
    "cl_2b": (9, "2B", 2, 2.0, 1050, 210000, "2025-08-01", "active", "2025-07-03"),
    "ws_8": (10, "8", 1, 1.0, 680, 175000, "2025-08-01", "active", "2025-06-29"),
    "ct_1205": (12, "1205", 1, 1.0, 720, 205000, "2025-08-01", "active", "2025-07-01"),
    "bf_3": (13, "3", 2, 1.0, 860, 189000, "2025-08-15", "active", "2025-07-02"),
}
FILLER_PROPERTIES = (9, 10, 12, 13, 14)


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250714)
    w = SeedWriter(
        "Apartment rentals seed data. Reference time 2025-07-14T09:00:00Z; the logged-in renter is 1."
    )
    users = []
    for i, name in enumerate(USERS, start=1):
        local = name.lower().replace(" ", ".") + ("2" if i == 30 else "")
        users.append(
            (
                i,
                name,
                f"{local}@mail.example",
                f"+1-512-555-{1000 + i:04d}",
                ts(REF - timedelta(days=800 - i * 19)),
            )
        )
    w.add("users", ("user_id", "name", "email", "phone", "joined_at"), users)
    w.add("landlords", ("landlord_id", "name", "email", "phone"), LANDLORDS)
    w.add(
        "properties",
        (
            "property_id",
            "landlord_id",
            "name",
            "address",
            "neighborhood",
            "pets_allowed",
            "has_parking",
        ),
        PROPERTIES,
    )

    units: list[tuple] = [(1, 1, "3B", 1, 1.0, 650)]  # Sofia's current home
    listings: list[tuple] = []
    lid_of: dict[str, int] = {}
    for key, (prop, number, beds, baths, sqft, rent, avail, status, listed) in LISTINGS.items():
        uid = len(units) + 1
        units.append((uid, prop, number, beds, baths, sqft))
        lid = len(listings) + 1
        lid_of[key] = lid
        listings.append((lid, uid, rent, rent, avail, 12, status, f"{listed}T12:00:00Z"))
    # filler listings Downtown and in South Congress
    for n in range(18):
        prop = FILLER_PROPERTIES[n % len(FILLER_PROPERTIES)]
        beds = rng.choice((0, 1, 1, 2, 2, 3))
        uid = len(units) + 1
        units.append(
            (
                uid,
                prop,
                f"{n + 5}{'ABCD'[n % 4]}",
                beds,
                1.0 if beds < 2 else 2.0,
                450 + beds * 260 + rng.randint(0, 120),
            )
        )
        rent = 120000 + beds * 45000 + rng.randint(0, 40) * 2500
        status = "active" if n % 6 else rng.choice(("rented", "withdrawn"))
        avail = (date(2025, 7, 20) + timedelta(days=rng.randint(0, 70))).isoformat()
        listed = (REF - timedelta(days=rng.randint(2, 45))).strftime("%Y-%m-%dT12:00:00Z")
        listings.append(
            (len(listings) + 1, uid, rent, rent, avail, rng.choice((6, 12, 12)), status, listed)
        )
    # units that are rented out to other tenants (no listing)
    rented_units = []
    for n in range(12):
        prop = rng.choice((1, 2, 5, 7, 9, 12))
        uid = len(units) + 1
        beds = rng.choice((1, 1, 2))
        units.append((uid, prop, f"R{n + 1}", beds, 1.0, 550 + beds * 250))
        rented_units.append(uid)
    w.add(
        "units", ("unit_id", "property_id", "unit_number", "bedrooms", "bathrooms", "sqft"), units
    )
    w.add(
        "listings",
        (
            "listing_id",
            "unit_id",
            "monthly_rent_cents",
            "deposit_cents",
            "available_from",
            "min_lease_months",
            "status",
            "listed_at",
        ),
        listings,
    )

    saved = [
        (1, 1, lid_of["ws_8"], "2025-07-01T20:00:00Z"),
        (2, 1, lid_of["rl_300"], "2025-06-12T19:00:00Z"),
        (3, 1, lid_of["mu_105"], "2025-05-22T21:00:00Z"),
        (4, 1, lid_of["ct_1205"], "2025-07-02T08:00:00Z"),
    ]
    active_ids = [x[0] for x in listings if x[6] == "active"]
    for user in range(2, len(USERS) + 1):
        for lid in rng.sample(active_ids, rng.randint(0, 3)):
            saved.append(
                (
                    len(saved) + 1,
                    user,
                    lid,
                    ts(REF - timedelta(days=rng.randint(1, 30), hours=rng.randint(0, 12))),
                )
            )
    w.add("saved_listings", ("saved_id", "user_id", "listing_id", "saved_at"), saved)

    viewings = [
        (1, lid_of["ws_8"], 1, "2025-07-16T10:00:00Z", "scheduled", "2025-07-03T09:00:00Z"),
        (2, lid_of["ct_1205"], 1, "2025-07-16T15:00:00Z", "scheduled", "2025-07-04T18:00:00Z"),
        (3, lid_of["bf_3"], 1, "2025-07-18T09:00:00Z", "scheduled", "2025-07-08T12:00:00Z"),
        (4, lid_of["rl_2b"], 1, "2025-07-02T17:00:00Z", "completed", "2025-06-20T10:00:00Z"),
        (5, lid_of["et_1"], 1, "2025-06-10T11:00:00Z", "completed", "2025-06-03T10:00:00Z"),
        (6, lid_of["mu_105"], 1, "2025-06-01T12:00:00Z", "cancelled", "2025-05-25T10:00:00Z"),
        # other renters; some slots the tasks run into
        (7, lid_of["ct_1205"], 4, "2025-07-18T14:00:00Z", "scheduled", "2025-07-09T10:00:00Z"),
        (8, lid_of["af_a2"], 6, "2025-07-17T10:00:00Z", "scheduled", "2025-07-10T10:00:00Z"),
        (9, lid_of["af_a2"], 9, "2025-07-17T12:00:00Z", "scheduled", "2025-07-11T10:00:00Z"),
        (10, lid_of["ct_1205"], 12, "2025-07-18T13:00:00Z", "scheduled", "2025-07-12T10:00:00Z"),
    ]
    taken = {(v[1], v[3]) for v in viewings}
    busy = set(lid_of.values()) - {lid_of[k] for k in ("ws_8", "bf_3", "cl_2b")}
    for _ in range(30):
        lid = rng.choice([i for i in active_ids if i not in busy])
        when = datetime(2025, 7, 15) + timedelta(days=rng.randint(0, 14), hours=rng.randint(9, 17))
        if (lid, ts(when)) in taken:
            continue
        taken.add((lid, ts(when)))
        viewings.append(
            (
                len(viewings) + 1,
                lid,
                rng.randint(2, len(USERS)),
                ts(when),
                "scheduled",
                ts(REF - timedelta(days=rng.randint(1, 10))),
            )
        )
    w.add(
        "viewings",
        ("viewing_id", "listing_id", "user_id", "scheduled_at", "status", "created_at"),
        viewings,
    )

    applications = [
        (
            1,
            lid_of["et_1"],
            1,
            600000,
            "2025-08-01",
            "Quiet tenant, references available.",
            "rejected",
            "2025-06-11T09:00:00Z",
        ),
        (2, lid_of["rl_2b"], 1, 600000, "2025-09-01", "", "submitted", "2025-07-03T08:00:00Z"),
        (3, lid_of["mu_105"], 1, 600000, "2025-07-15", "", "withdrawn", "2025-05-28T08:00:00Z"),
    ]
    for n in range(36):
        lid = rng.choice(active_ids)
        rent = next(x[2] for x in listings if x[0] == lid)
        status = rng.choice(("submitted", "submitted", "approved", "rejected", "withdrawn"))
        applications.append(
            (
                len(applications) + 1,
                lid,
                2 + n % (len(USERS) - 1),
                rent * rng.choice((3, 3, 4)),
                "2025-08-01",
                "",
                status,
                ts(REF - timedelta(days=rng.randint(1, 30))),
            )
        )
    w.add(
        "applications",
        (
            "application_id",
            "listing_id",
            "user_id",
            "monthly_income_cents",
            "move_in_date",
            "note",
            "status",
            "submitted_at",
        ),
        applications,
    )

    leases = [(1, 1, 1, "2024-09-01", "2025-08-31", 165000, 165000, "active", None, None)]
    for n, uid in enumerate(rented_units):
        start = date(2024, 3 + n % 10, 1)
        rent = 130000 + rng.randint(0, 30) * 2500
        leases.append(
            (
                len(leases) + 1,
                uid,
                2 + n * 2,
                start.isoformat(),
                date(start.year + 1, start.month, 1).isoformat(),
                rent,
                rent,
                "active",
                None,
                None,
            )
        )
    leases.append(
        (
            len(leases) + 1,
            units[1][0],
            1,
            "2023-08-01",
            "2024-07-31",
            150000,
            150000,
            "ended",
            "2024-06-01",
            "2024-07-31",
        )
    )  # Sofia's previous lease was a Maple Court 1-bed too
    w.add(
        "leases",
        (
            "lease_id",
            "unit_id",
            "tenant_id",
            "start_date",
            "end_date",
            "monthly_rent_cents",
            "deposit_cents",
            "status",
            "notice_given_on",
            "move_out_date",
        ),
        leases,
    )

    invoices = []
    for lease in leases:
        lease_id, _, tenant, start, _, rent = lease[:6]
        if lease[7] != "active":
            continue
        y, m = int(start[:4]), int(start[5:7])
        while (y, m) <= (2025, 7):
            period = f"{y}-{m:02d}"
            due = f"{period}-01"
            if tenant == 1 and period == "2025-07":
                invoices.append((len(invoices) + 1, lease_id, period, rent, due, "open", 0, None))
            elif tenant == 1:
                late = period == "2025-03"
                paid = f"{period}-{9 if late else 1:02d}T1{'5' if late else '0'}:00:00Z"
                invoices.append(
                    (
                        len(invoices) + 1,
                        lease_id,
                        period,
                        rent,
                        due,
                        "paid",
                        7500 if late else 0,
                        paid,
                    )
                )
            elif (y, m) >= (2025, 1):
                open_ = period == "2025-07" and rng.random() < 0.3
                invoices.append(
                    (
                        len(invoices) + 1,
                        lease_id,
                        period,
                        rent,
                        due,
                        "open" if open_ else "paid",
                        0,
                        None if open_ else f"{period}-0{rng.randint(1, 4)}T12:00:00Z",
                    )
                )
            m += 1
            if m == 13:
                y, m = y + 1, 1
    w.add(
        "rent_invoices",
        (
            "invoice_id",
            "lease_id",
            "period",
            "amount_cents",
            "due_date",
            "status",
            "late_fee_cents",
            "paid_at",
        ),
        invoices,
    )

    requests = [
        (
            1,
            1,
            "heating_cooling",
            "AC blows warm air in the living room.",
            "urgent",
            1,
            "resolved",
            "2025-06-02T18:00:00Z",
            "2025-06-04T15:00:00Z",
        ),
        (
            2,
            1,
            "plumbing",
            "Kitchen faucet drips constantly.",
            "normal",
            1,
            "open",
            "2025-07-10T19:30:00Z",
            "2025-07-10T19:30:00Z",
        ),
        (
            3,
            1,
            "other",
            "Bedroom window blind is broken and will not roll down.",
            "low",
            0,
            "scheduled",
            "2025-07-05T08:00:00Z",
            "2025-07-08T10:00:00Z",
        ),
        (
            4,
            1,
            "pest",
            "Ants near the balcony door.",
            "low",
            1,
            "cancelled",
            "2025-04-12T08:00:00Z",
            "2025-04-13T08:00:00Z",
        ),
    ]
    cats = ("plumbing", "electrical", "appliance", "heating_cooling", "pest", "other")
    for lease in leases[1:-1]:
        for _ in range(rng.randint(0, 2)):
            when = ts(REF - timedelta(days=rng.randint(1, 120)))
            requests.append(
                (
                    len(requests) + 1,
                    lease[0],
                    rng.choice(cats),
                    "Reported by tenant.",
                    rng.choice(("low", "normal", "urgent")),
                    1,
                    rng.choice(("open", "scheduled", "resolved", "resolved")),
                    when,
                    when,
                )
            )
    w.add(
        "maintenance_requests",
        (
            "request_id",
            "lease_id",
            "category",
            "description",
            "priority",
            "entry_permitted",
            "status",
            "created_at",
            "updated_at",
        ),
        requests,
    )
    return w


def main() -> None:
    w = build()
    path = w.write("rentals")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
