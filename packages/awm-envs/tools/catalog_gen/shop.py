"""Generate catalog/shop/seed.sql (reference time 2025-03-14T10:00:00Z).

User 1 (Maya Lindqvist) has a hand-written history the tasks rely on; the other
24 customers get seeded random orders, reviews, carts and wishlists.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 3, 14, 10, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def d(s: str) -> datetime:
    return datetime.fromisoformat(s)


USERS = [
    "Maya Lindqvist",
    "Omar Haddad",
    "Priya Raman",
    "Sam Carter",
    "Lena Vogel",
    "Diego Alvarez",
    "Hannah Kim",
    "Tomasz Nowak",
    "Aisha Bello",
    "Sam Carter",
    "Chloe Martin",
    "Kenji Watanabe",
    "Fatima Zahra",
    "Lucas Moreau",
    "Grace Okafor",
    "Noah Fischer",
    "Ines Costa",
    "Ravi Patel",
    "Emma Johansson",
    "Mateo Rossi",
    "Zoe Adams",
    "Yusuf Demir",
    "Clara Schmidt",
    "Ben Turner",
    "Olivia Brown",
]

CATEGORIES = [
    (1, "Home & Kitchen", None),
    (2, "Coffee", 1),
    (3, "Tea", 1),
    (4, "Cookware", 1),
    (5, "Apparel", None),
    (6, "Outdoor", None),
    (7, "Electronics", None),
    (8, "Office", None),
    (9, "Books", None),
]

# (category_id, name, brand, price_cents, stock, is_active)
PRODUCTS = [
    (2, "Aeropress Coffee Maker", "Aerobie", 3995, 14, 1),
    (2, "Burr Coffee Grinder", "Baratza", 13900, 6, 1),
    (2, "Ethiopia Yirgacheffe Beans 340g", "Northroast", 1850, 40, 1),
    (2, "Colombia Supremo Beans 340g", "Northroast", 1650, 33, 1),
    (2, "Ceramic Pour-Over Dripper", "Hario", 2400, 20, 1),
    (2, "Gooseneck Kettle", "Fellow", 8900, 0, 1),
    (2, "Paper Filters (100)", "Hario", 650, 120, 1),
    (3, "Sencha Green Tea 100g", "Yamato", 650, 0, 1),
    (3, "Chamomile Blend 50g", "Meadow Leaf", 725, 25, 1),
    (3, "Darjeeling First Flush 100g", "Himalaya Gardens", 1450, 18, 1),
    (3, "Rooibos Classic 100g", "Meadow Leaf", 500, 30, 0),
    (3, "Earl Grey Supreme 100g", "Harney", 1195, 22, 1),
    (3, "Cast Iron Teapot", "Iwachu", 6400, 4, 1),
    (4, "Cast Iron Skillet 10in", "Lodge", 3499, 11, 1),
    (4, "Nonstick Frying Pan 28cm", "Tefal", 4250, 9, 1),
    (4, "Dutch Oven 5.5qt", "Le Creuset", 36000, 2, 1),
    (4, "Chef's Knife 8in", "Victorinox", 5400, 15, 1),
    (4, "Bamboo Cutting Board", "Totally Bamboo", 2599, 30, 1),
    (4, "Stoneware Mug 350ml", "Clayworks", 1800, 25, 1),
    (4, "Stoneware Mug 350ml", "Hearth & Co", 1400, 40, 1),
    (1, "Linen Tea Towels (set of 3)", "Hearth & Co", 2200, 16, 1),
    (1, "Glass Storage Jars (set of 4)", "Weck", 3200, 0, 1),
    (5, "Wool Beanie", "Arctic Knit", 2500, 12, 1),
    (5, "Merino Base Layer Top", "Icebreaker", 8900, 7, 1),
    (5, "Rain Shell Jacket", "Northpeak", 15900, 5, 1),
    (5, "Hiking Socks (3 pack)", "Darn Tough", 2700, 50, 1),
    (5, "Fleece Gloves", "Arctic Knit", 1999, 0, 1),
    (5, "Trail Running Shoes", "Ridgeline", 12900, 8, 1),
    (5, "Trail Running Shoes", "Northpeak", 11500, 3, 1),
    (6, "2-Person Tent", "Northpeak", 24900, 4, 1),
    (6, "Sleeping Bag -5C", "Northpeak", 17900, 6, 1),
    (6, "Insulated Water Bottle 750ml", "Hydro Peak", 3495, 60, 1),
    (6, "Headlamp 400lm", "Lumen", 2999, 35, 1),
    (6, "Camp Stove", "Jetfire", 8999, 0, 1),
    (6, "Trekking Poles (pair)", "Ridgeline", 6900, 12, 1),
    (6, "Compact Binoculars 8x25", "Vista", 11900, 7, 1),
    (7, "Wireless Earbuds", "Sonora", 7900, 22, 1),
    (7, "Bluetooth Speaker", "Sonora", 5900, 17, 1),
    (7, "USB-C Charger 65W", "Voltix", 3900, 45, 1),
    (7, "Power Bank 20000mAh", "Voltix", 4500, 0, 1),
    (7, "E-Reader 6in", "Paperlight", 12999, 9, 1),
    (7, "Noise-Cancelling Headphones", "Sonora", 24900, 6, 1),
    (7, "Smart Plug (2 pack)", "Voltix", 2499, 28, 1),
    (8, "LED Desk Lamp", "Lumen", 4900, 13, 1),
    (8, "Ergonomic Mouse", "Clicktech", 3900, 19, 1),
    (8, "Mechanical Keyboard", "Clicktech", 9900, 10, 1),
    (8, "A5 Dotted Notebook", "Paperloft", 1500, 80, 1),
    (8, "Fountain Pen", "Kaweco", 2800, 24, 1),
    (8, "Monitor Stand", "Deskwise", 4500, 0, 1),
    (8, "Desk Organizer", "Deskwise", 2200, 14, 1),
    (9, "The Salt Path", "Penguin", 1299, 20, 1),
    (9, "Project Hail Mary", "Ballantine", 1699, 12, 1),
    (9, "The Art of Fermentation", "Chelsea Green", 3500, 5, 1),
    (9, "Braiding Sweetgrass", "Milkweed", 1800, 16, 1),
    (9, "Atomic Habits", "Avery", 1600, 30, 1),
    (9, "Thinking in Systems", "Chelsea Green", 2200, 0, 1),
    (9, "The Overstory", "Norton", 1899, 11, 1),
    (9, "Salt Fat Acid Heat", "Simon & Schuster", 3000, 9, 1),
    (9, "A Field Guide to Birds", "Peterson", 2700, 7, 1),
    (9, "A Field Guide to Birds (2009 edition)", "Peterson", 1200, 0, 0),
]
PRICE = {i + 1: p[3] for i, p in enumerate(PRODUCTS)}

CITIES = [
    ("Seattle", "981"),
    ("Portland", "972"),
    ("Austin", "787"),
    ("Denver", "802"),
    ("Boston", "021"),
    ("Chicago", "606"),
    ("Madison", "537"),
    ("Tucson", "857"),
    ("Raleigh", "276"),
    ("Columbus", "432"),
]
STREETS = [
    "Maple St",
    "Oak Ave",
    "Pine Rd",
    "Cedar Ln",
    "Elm St",
    "Birch Way",
    "Lake Dr",
    "Hill St",
]

# User 1's orders: (order_id, created, status, shipped, delivered, address_id, coupon_id, items, cancel_reason)
MAYA_ORDERS = [
    (
        1,
        "2024-09-02T14:12:00",
        "delivered",
        "2024-09-03T09:00:00",
        "2024-09-06T15:20:00",
        1,
        None,
        [(1, 1), (7, 2)],
        None,
    ),
    (
        2,
        "2024-10-11T08:40:00",
        "delivered",
        "2024-10-12T10:00:00",
        "2024-10-15T12:05:00",
        1,
        None,
        [(3, 2)],
        None,
    ),
    (3, "2024-11-20T19:03:00", "cancelled", None, None, 1, None, [(42, 1)], "Changed my mind"),
    (
        4,
        "2024-11-28T11:25:00",
        "delivered",
        "2024-11-29T09:30:00",
        "2024-12-03T16:45:00",
        1,
        None,
        [(24, 1), (26, 1)],
        None,
    ),
    (
        5,
        "2024-12-10T20:15:00",
        "delivered",
        "2024-12-11T08:00:00",
        "2024-12-14T11:00:00",
        1,
        None,
        [(57, 1), (55, 1)],
        None,
    ),
    (
        6,
        "2024-12-18T07:55:00",
        "delivered",
        "2024-12-18T15:00:00",
        "2024-12-21T10:30:00",
        3,
        None,
        [(14, 1)],
        None,
    ),
    (
        7,
        "2025-01-05T16:30:00",
        "delivered",
        "2025-01-06T09:00:00",
        "2025-01-09T13:10:00",
        1,
        None,
        [(12, 2)],
        None,
    ),
    (
        8,
        "2025-01-22T09:10:00",
        "delivered",
        "2025-01-23T09:00:00",
        "2025-01-27T14:40:00",
        1,
        None,
        [(33, 1), (32, 2)],
        None,
    ),
    (
        9,
        "2025-02-03T12:00:00",
        "delivered",
        "2025-02-04T09:00:00",
        "2025-02-07T17:25:00",
        1,
        2,
        [(17, 1), (18, 1)],
        None,
    ),
    (
        10,
        "2025-02-14T18:45:00",
        "delivered",
        "2025-02-15T09:00:00",
        "2025-02-19T12:00:00",
        2,
        None,
        [(28, 1)],
        None,
    ),
    (
        11,
        "2025-02-20T10:05:00",
        "delivered",
        "2025-02-21T09:00:00",
        "2025-02-25T15:35:00",
        1,
        None,
        [(5, 2), (4, 1)],
        None,
    ),
    (
        12,
        "2025-02-27T13:20:00",
        "delivered",
        "2025-02-28T09:00:00",
        "2025-03-02T11:50:00",
        1,
        None,
        [(37, 1), (39, 1), (47, 2)],
        None,
    ),
    (
        13,
        "2025-03-01T08:00:00",
        "delivered",
        "2025-03-02T09:00:00",
        "2025-03-05T10:15:00",
        2,
        None,
        [(48, 1)],
        None,
    ),
    (14, "2025-03-08T17:40:00", "shipped", "2025-03-10T08:30:00", None, 1, None, [(44, 1)], None),
    (15, "2025-03-11T21:05:00", "paid", None, None, 1, None, [(35, 1)], None),
    (16, "2025-03-13T19:25:00", "paid", None, None, 1, None, [(38, 1), (43, 2)], None),
]

COUPONS = [
    # (coupon_id, code, percent_off, min_subtotal, valid_from, valid_until, max_uses, times_used, is_active)
    (1, "SPRING15", 15, 3000, "2025-03-01T00:00:00Z", "2025-03-31T23:59:59Z", 500, 121, 1),
    (2, "WINTER10", 10, 0, "2024-12-01T00:00:00Z", "2025-02-28T23:59:59Z", 1000, 342, 1),
    (3, "WELCOME5", 5, 0, "2024-01-01T00:00:00Z", "2025-12-31T23:59:59Z", 200, 200, 1),
    (4, "VIP25", 25, 10000, "2025-01-01T00:00:00Z", "2025-12-31T23:59:59Z", 50, 12, 0),
    (5, "SUMMER20", 20, 5000, "2025-06-01T00:00:00Z", "2025-08-31T23:59:59Z", 500, 0, 1),
    (6, "BULK10", 10, 20000, "2025-01-01T00:00:00Z", "2025-12-31T23:59:59Z", 300, 44, 1),
]

REVIEW_TITLES = {
    5: ["Love it", "Exactly what I wanted", "Excellent quality", "Five stars"],
    4: ["Very good", "Solid purchase", "Happy with it", "Good value"],
    3: ["It's okay", "Average", "Does the job"],
    2: ["Disappointing", "Not great"],
    1: ["Broke quickly", "Would not buy again"],
}


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250314)
    w = SeedWriter(
        "Online shop seed data. Reference time 2025-03-14T10:00:00Z; the logged-in user is user 1."
    )

    users = []
    for i, name in enumerate(USERS, start=1):
        local = name.lower().replace(" ", ".")
        email = f"{local}{'' if i != 10 else '2'}@example.com"
        created = REF - timedelta(days=900 - i * 23, hours=i)
        users.append((i, name, email, ts(created)))
    w.add("users", ("user_id", "name", "email", "created_at"), users)

    addresses = [
        (1, 1, "Home", "Maya Lindqvist", "412 Alder St Apt 3", "Seattle", "98109", "US", 1),
        (2, 1, "Work", "Maya Lindqvist", "1200 Westlake Ave N Fl 5", "Seattle", "98109", "US", 0),
        (3, 1, "Mom", "Ingrid Lindqvist", "77 Hawthorne Blvd", "Portland", "97214", "US", 0),
    ]
    next_addr = 4
    user_addr: dict[int, list[int]] = {1: [1, 2, 3]}
    for uid in range(2, len(USERS) + 1):
        user_addr[uid] = []
        for k in range(1 if uid % 3 else 2):
            city, prefix = CITIES[(uid + k) % len(CITIES)]
            addresses.append(
                (
                    next_addr,
                    uid,
                    "Home" if k == 0 else "Office",
                    USERS[uid - 1],
                    f"{rng.randint(10, 999)} {rng.choice(STREETS)}",
                    city,
                    f"{prefix}{rng.randint(10, 99)}",
                    "US",
                    1 if k == 0 else 0,
                )
            )
            user_addr[uid].append(next_addr)
            next_addr += 1
    w.add(
        "addresses",
        (
            "address_id",
            "user_id",
            "label",
            "recipient",
            "line1",
            "city",
            "postal_code",
            "country",
            "is_default",
        ),
        addresses,
    )
    w.add("categories", ("category_id", "name", "parent_id"), CATEGORIES)

    products = []
    for pid, (cat, name, brand, price, stock, active) in enumerate(PRODUCTS, start=1):
        sku = f"{brand[:3].upper().replace(' ', 'X').replace('&', 'N')}-{pid:04d}"
        desc = f"{name} by {brand}."
        created = REF - timedelta(days=400 - pid * 3)
        products.append((pid, cat, sku, name, brand, desc, price, stock, active, ts(created)))
    w.add(
        "products",
        (
            "product_id",
            "category_id",
            "sku",
            "name",
            "brand",
            "description",
            "price_cents",
            "stock",
            "is_active",
            "created_at",
        ),
        products,
    )
    w.add(
        "coupons",
        (
            "coupon_id",
            "code",
            "percent_off",
            "min_subtotal_cents",
            "valid_from",
            "valid_until",
            "max_uses",
            "times_used",
            "is_active",
        ),
        COUPONS,
    )

    orders, items = [], []
    next_item = 1
    for oid, created, status, shipped, delivered, addr, coupon, lines, reason in MAYA_ORDERS:
        subtotal = sum(PRICE[p] * q for p, q in lines)
        pct = {c[0]: c[2] for c in COUPONS}.get(coupon, 0)
        discount = subtotal * pct // 100
        orders.append(
            (
                oid,
                1,
                addr,
                coupon,
                status,
                subtotal,
                discount,
                subtotal - discount,
                created + "Z",
                shipped and shipped + "Z",
                delivered and delivered + "Z",
                created + "Z" if status == "cancelled" else None,
                reason,
            )
        )
        for p, q in lines:
            items.append((next_item, oid, p, q, PRICE[p]))
            next_item += 1
    maya_items = {(o, p): iid for iid, o, p, _, _ in items}

    buyable = [pid for pid, p in enumerate(PRODUCTS, start=1) if p[5]]
    delivered_by_user: dict[int, set[int]] = {}
    oid = 100
    for _ in range(48):
        uid = rng.randint(2, len(USERS))
        created = REF - timedelta(days=rng.randint(1, 200), minutes=rng.randint(0, 1440))
        age = (REF - created).days
        if age > 10:
            status = rng.choice(["delivered"] * 6 + ["cancelled"])
        elif age > 3:
            status = rng.choice(["delivered", "shipped"])
        else:
            status = rng.choice(["paid", "shipped"])
        lines = {}
        for _ in range(rng.randint(1, 3)):
            lines[rng.choice(buyable)] = rng.randint(1, 2)
        subtotal = sum(PRICE[p] * q for p, q in lines.items())
        shipped = ts(created + timedelta(days=1)) if status in ("shipped", "delivered") else None
        delivered = ts(created + timedelta(days=4)) if status == "delivered" else None
        orders.append(
            (
                oid,
                uid,
                user_addr[uid][0],
                None,
                status,
                subtotal,
                0,
                subtotal,
                ts(created),
                shipped,
                delivered,
                ts(created + timedelta(hours=2)) if status == "cancelled" else None,
                "Ordered by mistake" if status == "cancelled" else None,
            )
        )
        for p, q in sorted(lines.items()):
            items.append((next_item, oid, p, q, PRICE[p]))
            next_item += 1
            if status == "delivered":
                delivered_by_user.setdefault(uid, set()).add(p)
        oid += 1
    w.add(
        "orders",
        (
            "order_id",
            "user_id",
            "address_id",
            "coupon_id",
            "status",
            "subtotal_cents",
            "discount_cents",
            "total_cents",
            "created_at",
            "shipped_at",
            "delivered_at",
            "cancelled_at",
            "cancel_reason",
        ),
        orders,
    )
    w.add(
        "order_items",
        ("order_item_id", "order_id", "product_id", "quantity", "unit_price_cents"),
        items,
    )

    reviews = [
        (1, 1, 1, 5, "Best brew in minutes", "Clean cup, easy to rinse.", "2024-09-10T08:00:00Z"),
        (
            2,
            3,
            1,
            4,
            "Bright and fruity",
            "Lovely as pour-over, a bit pricey.",
            "2024-10-20T09:30:00Z",
        ),
        (3, 14, 1, 5, "Will outlive me", "Heavy but heats evenly.", "2024-12-28T18:00:00Z"),
        (4, 39, 1, 5, "Charges everything", "Laptop and phone at once.", "2025-03-04T20:10:00Z"),
    ]
    rid = 5
    for uid in sorted(delivered_by_user):
        for p in sorted(delivered_by_user[uid]):
            if rng.random() < 0.8:
                rating = rng.choice([5, 5, 4, 4, 4, 3, 2, 1])
                title = rng.choice(REVIEW_TITLES[rating])
                reviews.append(
                    (
                        rid,
                        p,
                        uid,
                        rating,
                        title,
                        f"{title}. Reviewed after a few weeks of use.",
                        ts(REF - timedelta(days=rng.randint(1, 150))),
                    )
                )
                rid += 1
    w.add(
        "reviews",
        ("review_id", "product_id", "user_id", "rating", "title", "body", "created_at"),
        reviews,
    )

    cart = [
        (1, 1, 23, 1, "2025-03-12T18:00:00Z"),
        (2, 1, 19, 1, "2025-03-12T18:02:00Z"),
        (3, 1, 10, 2, "2025-03-13T07:45:00Z"),
    ]
    cid = 4
    for uid in range(2, len(USERS) + 1, 2):
        for p in rng.sample(buyable, rng.randint(1, 2)):
            cart.append(
                (cid, uid, p, rng.randint(1, 3), ts(REF - timedelta(days=rng.randint(0, 20))))
            )
            cid += 1
    w.add("cart_items", ("cart_item_id", "user_id", "product_id", "quantity", "added_at"), cart)

    wishlist = [
        (1, 1, 6, "2024-12-01T10:00:00Z"),
        (2, 1, 21, "2025-01-03T10:00:00Z"),
        (3, 1, 13, "2025-01-15T10:00:00Z"),
        (4, 1, 45, "2025-02-01T10:00:00Z"),
        (5, 1, 60, "2025-02-10T10:00:00Z"),
        (6, 1, 54, "2025-02-22T10:00:00Z"),
        (7, 1, 32, "2025-03-01T10:00:00Z"),
    ]
    wid = 8
    for uid in range(3, len(USERS) + 1, 2):
        for p in rng.sample(range(1, len(PRODUCTS) + 1), 2):
            wishlist.append((wid, uid, p, ts(REF - timedelta(days=rng.randint(0, 90)))))
            wid += 1
    w.add("wishlist_items", ("wishlist_item_id", "user_id", "product_id", "added_at"), wishlist)

    returns = [
        (1, maya_items[(9, 18)], 1, "Warped after first wash", "refunded", "2025-02-10T09:00:00Z"),
        (2, maya_items[(4, 26)], 1, "Wrong size", "refunded", "2024-12-05T09:00:00Z"),
    ]
    retid = 3
    status_of = {o[0]: o[4] for o in orders}
    for iid, o, _p, _q, _ in items:
        if o >= 100 and status_of[o] == "delivered" and retid < 9 and rng.random() < 0.08:
            returns.append(
                (
                    retid,
                    iid,
                    1,
                    rng.choice(["Damaged in transit", "Not as described", "No longer needed"]),
                    rng.choice(["requested", "approved", "rejected", "refunded"]),
                    ts(REF - timedelta(days=rng.randint(1, 60))),
                )
            )
            retid += 1
    w.add(
        "returns",
        ("return_id", "order_item_id", "quantity", "reason", "status", "created_at"),
        returns,
    )

    return w


def main() -> None:
    w = build()
    path = w.write("shop")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
