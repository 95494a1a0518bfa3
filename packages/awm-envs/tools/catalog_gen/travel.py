"""Generate catalog/travel/seed.sql (reference time 2025-07-01T12:00:00Z).

Customer 1 (Nina Petrova) has three saved travellers (her husband Leo, whose
passport expires in August, and their daughter Mila, who has none on file), an
upcoming Lisbon holiday on non-refundable fares, a Boston work trip on flex
fares and a loyalty balance. Flights and hotel nights for July are generated
with a fixed seed; the dates the tasks use are written by hand (sold-out and
cancelled flights, a hotel night with one room left).
"""

from __future__ import annotations

import random
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 7, 1, 12, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


AIRPORTS = [
    ("JFK", "New York", "US"),
    ("BOS", "Boston", "US"),
    ("ORD", "Chicago", "US"),
    ("SFO", "San Francisco", "US"),
    ("YYZ", "Toronto", "CA"),
    ("LIS", "Lisbon", "PT"),
    ("LHR", "London", "GB"),
    ("CDG", "Paris", "FR"),
]

# (origin, destination, carrier prefix, hours of departure, duration minutes, basic fare range)
ROUTES = [
    ("JFK", "BOS", "NE", (7, 12, 18, 20), 75, (9000, 16000)),
    ("BOS", "JFK", "NE", (8, 13, 19), 75, (9000, 16000)),
    ("BOS", "ORD", "LK", (8, 10, 13, 19), 165, (15000, 26000)),
    ("ORD", "BOS", "LK", (9, 16), 150, (15000, 26000)),
    ("JFK", "LIS", "TP", (21,), 420, (42000, 61000)),
    ("LIS", "JFK", "TP", (11, 15, 19), 480, (44000, 63000)),
    ("JFK", "YYZ", "MA", (8, 12, 17), 100, (14000, 22000)),
    ("YYZ", "JFK", "MA", (10, 18), 100, (14000, 22000)),
    ("JFK", "LHR", "AT", (19,), 420, (48000, 70000)),
    ("JFK", "SFO", "PC", (9, 16), 390, (21000, 36000)),
]

# Hand-set flights: (origin, dest, day, hour) -> (basic, flex, seats, status)
FORCED = {
    ("BOS", "ORD", 18, 8): (18900, 28900, 0, "scheduled"),
    ("BOS", "ORD", 18, 13): (19900, 29900, 40, "cancelled"),
    ("BOS", "ORD", 18, 19): (21900, 31900, 12, "scheduled"),
    ("BOS", "ORD", 18, 10): (24900, 34900, 7, "scheduled"),
    ("JFK", "BOS", 3, 7): (9900, 15900, 20, "scheduled"),
    ("JFK", "BOS", 3, 12): (10900, 16900, 11, "scheduled"),
    ("JFK", "BOS", 3, 18): (12900, 18900, 6, "scheduled"),
    ("JFK", "BOS", 3, 20): (9500, 14900, 15, "scheduled"),
    ("JFK", "LIS", 10, 21): (52000, 68000, 9, "scheduled"),
    ("LIS", "JFK", 16, 11): (48000, 64000, 1, "scheduled"),
    ("LIS", "JFK", 16, 15): (55000, 71000, 9, "scheduled"),
    ("LIS", "JFK", 16, 19): (61000, 79000, 14, "scheduled"),
    ("JFK", "YYZ", 25, 8): (16000, 24000, 5, "scheduled"),
    ("JFK", "YYZ", 25, 12): (18000, 26000, 9, "scheduled"),
    ("JFK", "YYZ", 25, 17): (14000, 21000, 2, "scheduled"),
    ("YYZ", "JFK", 27, 10): (15000, 23000, 8, "scheduled"),
    ("YYZ", "JFK", 27, 18): (13000, 19500, 4, "scheduled"),
}

# (hotel_id, name, city, airport, stars, [(room name, nightly cents, free cancel hours)])
HOTELS = [
    (
        1,
        "Alfama Budget Rooms",
        "Lisbon",
        "LIS",
        3,
        [("Standard Double", 9800, 48), ("Family Room", 13900, 48)],
    ),
    (
        2,
        "Tejo Grand Hotel",
        "Lisbon",
        "LIS",
        5,
        [("Standard Double", 31000, 72), ("River Suite", 52000, 72)],
    ),
    (
        3,
        "Baixa Boutique",
        "Lisbon",
        "LIS",
        4,
        [("Standard Double", 18500, 48), ("Deluxe King", 24000, 48)],
    ),
    (
        4,
        "Chiado Suites",
        "Lisbon",
        "LIS",
        4,
        [("Standard Double", 20500, 48), ("Junior Suite", 27500, 48)],
    ),
    (
        5,
        "Back Bay Business Hotel",
        "Boston",
        "BOS",
        4,
        [("King Room", 26900, 24), ("Twin Room", 24900, 24)],
    ),
    (
        6,
        "Harbourfront Inn",
        "Toronto",
        "YYZ",
        3,
        [("Standard Queen", 15900, 24), ("Family Room", 21900, 24)],
    ),
    (
        7,
        "Maple Suites",
        "Toronto",
        "YYZ",
        4,
        [("Standard Queen", 17900, 24), ("Two-Bedroom Suite", 34900, 24)],
    ),
    (
        8,
        "Loop Central Hotel",
        "Chicago",
        "ORD",
        3,
        [("Queen Room", 16900, 24), ("King Room", 18900, 24)],
    ),
    (
        9,
        "Thames Side Hotel",
        "London",
        "LHR",
        4,
        [("Double Room", 23900, 48), ("Family Room", 31900, 48)],
    ),
    (
        10,
        "Tenderloin Lodge",
        "San Francisco",
        "SFO",
        2,
        [("Queen Room", 12900, 24), ("Bunk Room", 8900, 24)],
    ),
]

CUSTOMERS = [
    "Nina Petrova",
    "Arjun Mehta",
    "Claire Dubois",
    "Nina Petrova",
    "Tomasz Wojcik",
    "Grace Kim",
    "Diego Fernandez",
    "Hannah Berg",
    "Kofi Asante",
    "Laura Bianchi",
    "Sven Olsen",
    "Yara Saleh",
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250701)
    w = SeedWriter(
        "Travel booking seed data. Reference time 2025-07-01T12:00:00Z; the logged-in customer is 1."
    )
    w.add("airports", ("airport_code", "city", "country"), AIRPORTS)
    customers = [
        (1, "Nina Petrova", "nina.petrova@example.net", "gold", 150000, "2019-03-04T10:00:00Z")
    ]
    for i, name in enumerate(CUSTOMERS[1:], start=2):
        customers.append(
            (
                i,
                name,
                f"{name.lower().replace(' ', '.')}{'' if i != 4 else '2'}@example.net",
                rng.choice(["basic", "silver", "gold"]),
                rng.randint(0, 90) * 1000,
                ts(REF - timedelta(days=rng.randint(100, 2000))),
            )
        )
    w.add(
        "customers",
        ("customer_id", "name", "email", "loyalty_tier", "points_balance", "created_at"),
        customers,
    )

    flights = []
    index: dict[tuple[str, str, int, int], int] = {}
    # a past flight for the June trip
    past = [("BOS", "ORD", datetime(2025, 6, 12, 8, 0), 165, 17900, 27900)]
    for o, d, dep, dur, basic, flex in past:
        flights.append(
            [
                len(flights) + 1,
                f"LK{300 + len(flights)}",
                o,
                d,
                dep,
                dep + timedelta(minutes=dur),
                basic,
                flex,
                0,
                "departed",
            ]
        )
    for o, d, prefix, hours, dur, (lo, hi) in ROUTES:
        for day in range(1, 32):
            for n, hour in enumerate(hours):
                dep = datetime(2025, 7, day, hour, 0)
                forced = FORCED.get((o, d, day, hour))
                if forced:
                    basic, flex, seats, status = forced
                else:
                    basic = rng.randint(lo // 100, hi // 100) * 100
                    flex = basic + rng.choice([5000, 6000, 7000, 8000])
                    r = rng.random()
                    seats = 0 if r < 0.08 else rng.randint(1, 60)
                    status = "cancelled" if rng.random() < 0.03 else "scheduled"
                if dep < REF:
                    status = "departed"
                fid = len(flights) + 1
                number = (
                    f"{prefix}{100 + ROUTES.index((o, d, prefix, hours, dur, (lo, hi))) * 10 + n}"
                )
                flights.append(
                    [
                        fid,
                        number,
                        o,
                        d,
                        dep,
                        dep + timedelta(minutes=dur),
                        basic,
                        flex,
                        seats,
                        status,
                    ]
                )
                index[(o, d, day, hour)] = fid
    w.add(
        "flights",
        (
            "flight_id",
            "flight_number",
            "origin_code",
            "destination_code",
            "departs_at",
            "arrives_at",
            "fare_basic_cents",
            "fare_flex_cents",
            "seats_available",
            "status",
        ),
        [(f[0], f[1], f[2], f[3], ts(f[4]), ts(f[5]), *f[6:]) for f in flights],
    )

    w.add(
        "hotels",
        ("hotel_id", "name", "city", "airport_code", "stars"),
        [h[:5] for h in HOTELS],
    )
    room_types = []
    for h in HOTELS:
        for name, rate, hours in h[5]:
            room_types.append((len(room_types) + 1, h[0], name, rate, hours))
    w.add(
        "room_types",
        ("room_type_id", "hotel_id", "name", "nightly_rate_cents", "free_cancel_hours"),
        room_types,
    )
    nights = []
    for rt in room_types:
        for day in range(1, 32):
            night = date(2025, 7, day)
            left = rng.choice([0, 1, 2, 3, 4, 5, 6, 8])
            if rt[0] == 5 and day == 13:  # Baixa Boutique standard: sold out one night
                left = 0
            elif rt[0] == 7 and 11 <= day <= 15:  # Chiado standard: free all week
                left = 3
            elif rt[0] == 11 and day == 26:  # Harbourfront standard: one room left
                left = 1
            elif rt[0] == 11 and day == 25:
                left = 4
            elif rt[0] == 13 and day in (25, 26):  # Maple Suites standard
                left = 3
            elif rt[0] in (5, 6, 3, 8) and 11 <= day <= 15 and left == 0:
                left = 2
            nights.append((rt[0], night.isoformat(), left))
    w.add("room_nights", ("room_type_id", "night", "rooms_left"), nights)

    passengers = [
        (1, 1, "Nina Petrova", "1986-02-14", "P4410983", "2030-05-20"),
        (2, 1, "Leo Petrov", "1984-09-02", "P2093318", "2025-08-15"),
        (3, 1, "Mila Petrova", "2016-06-30", None, None),
    ]
    for cid in range(2, len(CUSTOMERS) + 1):
        name = CUSTOMERS[cid - 1]
        passengers.append(
            (
                len(passengers) + 1,
                cid,
                name,
                f"19{rng.randint(60, 99)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
                f"P{rng.randint(1000000, 9999999)}",
                f"20{rng.randint(26, 34)}-0{rng.randint(1, 9)}-01",
            )
        )
    w.add(
        "passengers",
        (
            "passenger_id",
            "customer_id",
            "full_name",
            "date_of_birth",
            "passport_number",
            "passport_expires",
        ),
        passengers,
    )

    bookings = [
        (1, 1, "TRV-4HD9Z", "completed", "2025-05-20T09:00:00Z"),
        (2, 1, "TRV-8K2Q4", "confirmed", "2025-05-02T18:30:00Z"),
        (3, 1, "TRV-B7M3C", "confirmed", "2025-06-20T08:15:00Z"),
        (4, 1, "TRV-X1P6R", "cancelled", "2025-04-11T12:00:00Z"),
    ]
    tickets = [
        (1, 1, 1, 1, "flex", 27900, "card", "flown"),
        (2, 2, index[("JFK", "LIS", 10, 21)], 1, "basic", 52000, "card", "issued"),
        (3, 2, index[("JFK", "LIS", 10, 21)], 2, "basic", 52000, "card", "issued"),
        (4, 3, index[("JFK", "BOS", 3, 7)], 1, "flex", 15900, "card", "issued"),
        (5, 4, index[("JFK", "SFO", 20, 9)], 1, "flex", 30000, "card", "cancelled"),
    ]
    stays = [
        (1, 1, 15, "2025-06-12", "2025-06-14", 1, 33800, "card", "completed"),
        (2, 2, 1, "2025-07-11", "2025-07-16", 1, 49000, "card", "confirmed"),
        (3, 3, 9, "2025-07-03", "2025-07-05", 1, 53800, "card", "confirmed"),
    ]
    payments = [
        (1, 1, 61600, "card", "charge", "2025-05-20T09:00:00Z", "Flight and hotel"),
        (2, 2, 104000, "card", "charge", "2025-05-02T18:30:00Z", "Flights JFK-LIS x2"),
        (3, 2, 49000, "card", "charge", "2025-05-02T18:31:00Z", "Hotel Lisbon"),
        (4, 3, 15900, "card", "charge", "2025-06-20T08:15:00Z", "Flight JFK-BOS"),
        (5, 3, 53800, "card", "charge", "2025-06-20T08:16:00Z", "Hotel Boston"),
        (6, 4, 30000, "card", "charge", "2025-04-11T12:00:00Z", "Flight JFK-SFO"),
        (7, 4, -30000, "card", "refund", "2025-04-15T09:00:00Z", "Ticket 5 cancelled"),
    ]
    ledger = [
        (1, 1, None, 120000, "Welcome to Gold status bonus", "2025-01-05T00:00:00Z"),
        (2, 1, 1, 30000, "Partner hotel stays", "2025-06-15T00:00:00Z"),
    ]
    # other customers' upcoming trips
    bid, tid, sid, pid = 5, 6, 4, 8
    for cid in range(2, len(CUSTOMERS) + 1):
        for _ in range(rng.randint(1, 2)):
            (o, d, day, hour), fid = rng.choice(sorted(index.items()))
            f = flights[fid - 1]
            if f[9] != "scheduled":
                continue
            fare = rng.choice(["basic", "flex"])
            price = f[6] if fare == "basic" else f[7]
            pax = next(p[0] for p in passengers if p[1] == cid)
            bookings.append(
                (
                    bid,
                    cid,
                    f"TRV-{rng.randint(10000, 99999)}Q",
                    "confirmed",
                    ts(REF - timedelta(days=rng.randint(1, 60))),
                )
            )
            tickets.append((tid, bid, fid, pax, fare, price, "card", "issued"))
            payments.append((pid, bid, price, "card", "charge", bookings[-1][4], "Flight"))
            tid += 1
            pid += 1
            if rng.random() < 0.5:
                rt = rng.choice(room_types)
                stays.append(
                    (
                        sid,
                        bid,
                        rt[0],
                        f"2025-07-{day:02d}",
                        f"2025-07-{min(day + 2, 31):02d}" if day < 31 else "2025-08-01",
                        1,
                        rt[3] * 2,
                        "card",
                        "confirmed",
                    )
                )
                payments.append((pid, bid, rt[3] * 2, "card", "charge", bookings[-1][4], "Hotel"))
                sid += 1
                pid += 1
            bid += 1
        ledger.append(
            (
                len(ledger) + 1,
                cid,
                None,
                customers[cid - 1][4],
                "Opening balance",
                "2025-01-01T00:00:00Z",
            )
        )
    w.add("bookings", ("booking_id", "customer_id", "reference", "status", "created_at"), bookings)
    w.add(
        "tickets",
        (
            "ticket_id",
            "booking_id",
            "flight_id",
            "passenger_id",
            "fare_type",
            "price_cents",
            "paid_with",
            "status",
        ),
        tickets,
    )
    w.add(
        "hotel_stays",
        (
            "stay_id",
            "booking_id",
            "room_type_id",
            "check_in",
            "check_out",
            "rooms",
            "price_cents",
            "paid_with",
            "status",
        ),
        stays,
    )
    w.add(
        "payments",
        ("payment_id", "booking_id", "amount_cents", "method", "kind", "created_at", "note"),
        payments,
    )
    w.add(
        "loyalty_ledger",
        ("entry_id", "customer_id", "booking_id", "points", "reason", "created_at"),
        ledger,
    )
    return w


def main() -> None:
    w = build()
    path = w.write("travel")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
