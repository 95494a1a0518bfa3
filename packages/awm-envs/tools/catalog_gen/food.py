"""Generate catalog/food/seed.sql (reference time 2025-10-10T18:30:00Z, a Friday evening).

Customer 1 (Elena Sokolova) has a cart at Bella Napoli, fifteen orders (twelve
delivered over three months, one cancelled, one being prepared, one just
placed), two favourites (one of them temporarily closed) and promo codes in
every state. Two restaurants share the name Bella Napoli in different zones.
19 other customers have their own carts, orders and reviews.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 10, 10, 18, 30, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


# (id, name, cuisine, zones, opens, closes, is_open, min_order, fee, rating)
RESTAURANTS = [
    (1, "Bella Napoli", "italian", "center,east", "11:00", "23:00", 1, 1500, 299, 4.6),
    (2, "Sakura Sushi", "japanese", "center,north", "12:00", "22:00", 1, 2000, 399, 4.7),
    (3, "Green Bowl", "vegan", "center", "10:00", "20:00", 1, 1200, 199, 4.4),
    (4, "Taco Loco", "mexican", "north,center", "11:00", "23:59", 1, 1000, 249, 4.2),
    (5, "Curry House", "indian", "center,north,south", "12:00", "23:00", 1, 1800, 299, 4.5),
    (6, "Burger Barn", "american", "center", "11:00", "23:00", 0, 1000, 199, 4.1),
    (7, "Pho Saigon", "vietnamese", "south", "11:00", "22:00", 1, 1500, 349, 4.5),
    (8, "Bella Napoli", "italian", "north", "12:00", "22:30", 1, 1500, 349, 4.3),
    (9, "Dragon Wok", "chinese", "center,east", "11:00", "15:00", 1, 1500, 249, 4.0),
    (10, "Mediterraneo", "greek", "center,east", "11:30", "22:00", 1, 1500, 299, 4.6),
    (11, "Seoul Kitchen", "korean", "north,east", "12:00", "22:00", 1, 2000, 349, 4.4),
    (12, "Le Petit Bistro", "french", "east", "18:00", "23:00", 1, 2500, 499, 4.8),
]

# restaurant -> [(name, category, price, vegetarian, available)]
MENUS = {
    1: [
        ("Margherita Pizza", "pizza", 1290, 1, 1),
        ("Pepperoni Pizza", "pizza", 1490, 0, 1),
        ("Quattro Formaggi Pizza", "pizza", 1590, 1, 1),
        ("Garlic Bread", "sides", 490, 1, 1),
        ("Caesar Salad", "salads", 890, 0, 1),
        ("Tiramisu", "desserts", 790, 1, 1),
        ("Panna Cotta", "desserts", 690, 1, 0),
        ("Lasagna", "pasta", 1450, 0, 1),
    ],
    2: [
        ("California Roll", "rolls", 890, 0, 1),
        ("Avocado Roll", "rolls", 690, 1, 1),
        ("Salmon Nigiri", "nigiri", 790, 0, 0),
        ("Tuna Sashimi", "sashimi", 1490, 0, 1),
        ("Edamame", "sides", 450, 1, 1),
        ("Miso Soup", "soups", 390, 1, 1),
        ("Cucumber Roll", "rolls", 590, 1, 1),
        ("Chicken Teriyaki", "mains", 1390, 0, 1),
    ],
    3: [
        ("Buddha Bowl", "bowls", 1190, 1, 1),
        ("Falafel Wrap", "wraps", 890, 1, 1),
        ("Green Smoothie", "drinks", 550, 1, 1),
        ("Lentil Soup", "soups", 650, 1, 1),
        ("Quinoa Salad", "salads", 990, 1, 0),
    ],
    4: [
        ("Beef Tacos", "tacos", 990, 0, 1),
        ("Veggie Burrito", "burritos", 1090, 1, 1),
        ("Nachos Supreme", "sides", 850, 1, 1),
        ("Chicken Quesadilla", "mains", 1150, 0, 1),
        ("Churros", "desserts", 550, 1, 1),
    ],
    5: [
        ("Chicken Tikka Masala", "mains", 1490, 0, 1),
        ("Palak Paneer", "mains", 1290, 1, 1),
        ("Lamb Rogan Josh", "mains", 1690, 0, 1),
        ("Garlic Naan", "breads", 390, 1, 1),
        ("Vegetable Samosa", "starters", 590, 1, 1),
        ("Mango Lassi", "drinks", 450, 1, 1),
    ],
    6: [
        ("Classic Burger", "burgers", 1090, 0, 1),
        ("Veggie Burger", "burgers", 1050, 1, 1),
        ("Fries", "sides", 390, 1, 1),
    ],
    7: [
        ("Pho Bo", "soups", 1390, 0, 1),
        ("Spring Rolls", "starters", 690, 1, 1),
        ("Banh Mi", "mains", 990, 0, 1),
    ],
    8: [
        ("Margherita Pizza", "pizza", 1390, 1, 1),
        ("Pepperoni Pizza", "pizza", 1590, 0, 1),
        ("Diavola Pizza", "pizza", 1650, 0, 1),
        ("Garlic Bread", "sides", 550, 1, 1),
        ("Tiramisu", "desserts", 850, 1, 1),
    ],
    9: [
        ("Kung Pao Chicken", "mains", 1290, 0, 1),
        ("Mapo Tofu", "mains", 1150, 1, 1),
        ("Fried Rice", "sides", 690, 1, 1),
    ],
    10: [
        ("Gyros Plate", "mains", 1450, 0, 1),
        ("Greek Salad", "salads", 950, 1, 1),
        ("Spanakopita", "starters", 750, 1, 1),
        ("Baklava", "desserts", 590, 1, 1),
        ("Moussaka", "mains", 1550, 0, 1),
    ],
    11: [
        ("Bibimbap", "mains", 1390, 1, 1),
        ("Korean Fried Chicken", "mains", 1590, 0, 1),
        ("Kimchi Pancake", "starters", 890, 1, 1),
    ],
    12: [
        ("Coq au Vin", "mains", 2450, 0, 1),
        ("French Onion Soup", "soups", 990, 1, 1),
        ("Creme Brulee", "desserts", 890, 1, 1),
    ],
}

COURIERS = [
    (1, "Marco Silva", "bike", 4.8),
    (2, "Aylin Demir", "scooter", 4.9),
    (3, "Josh Turner", "car", 4.5),
    (4, "Priya Shah", "bike", 4.7),
    (5, "Ken Watanabe", "scooter", 4.6),
    (6, "Lucy Brown", "car", 4.3),
    (7, "Omar Haddad", "bike", 4.8),
    (8, "Nora Vik", "scooter", 4.4),
]

OTHERS = [
    "Jake Miller", "Sofia Costa", "Ravi Kumar", "Mia Johansson", "Liam O'Brien", "Chen Wei",
    "Fatou Diop", "Anna Novak", "Elena Sokolova", "Tom Harris", "Isabel Reyes", "Yusuf Kaya",
    "Greta Lind", "Pablo Ruiz", "Hana Kim", "Oscar Berg", "Leah Cohen", "Max Weber", "Zoe Adams",
]  # fmt: skip

PROMOS = [
    (1, "FRIDAY20", 20, 800, 2500, "2025-10-10T00:00:00Z", "2025-10-10T23:59:59Z", None, 3, 1),
    (2, "SUSHI15", 15, 1500, 2000, "2025-10-01T00:00:00Z", "2025-10-31T23:59:59Z", 2, 5, 1),
    (3, "SUMMER25", 25, 1000, 1500, "2025-06-01T00:00:00Z", "2025-09-30T23:59:59Z", None, 5, 1),
    (4, "VIP30", 30, 1500, 3000, "2025-01-01T00:00:00Z", "2025-12-31T23:59:59Z", None, 5, 0),
    (5, "ONCE50", 50, 1200, 1500, "2025-08-01T00:00:00Z", "2025-12-31T23:59:59Z", None, 1, 1),
    (6, "PIZZA10", 10, 500, 2000, "2025-09-01T00:00:00Z", "2025-11-30T23:59:59Z", 8, 5, 1),
]

# Elena's orders: (restaurant, address, courier, promo, status, placed, [(item name, qty)], tip)
ELENA_ORDERS = [
    (
        2,
        1,
        2,
        None,
        "delivered",
        datetime(2025, 10, 3, 19, 0),
        [("California Roll", 2), ("Salmon Nigiri", 1), ("Edamame", 1)],
        300,
    ),
    (
        1,
        1,
        1,
        None,
        "delivered",
        datetime(2025, 9, 27, 19, 30),
        [("Margherita Pizza", 1), ("Caesar Salad", 1)],
        200,
    ),
    (
        5,
        2,
        3,
        None,
        "delivered",
        datetime(2025, 9, 24, 12, 45),
        [("Chicken Tikka Masala", 1), ("Garlic Naan", 2)],
        150,
    ),
    (
        2,
        2,
        4,
        None,
        "delivered",
        datetime(2025, 9, 19, 13, 0),
        [("Avocado Roll", 2), ("Miso Soup", 1)],
        200,
    ),
    (
        3,
        1,
        5,
        None,
        "delivered",
        datetime(2025, 9, 15, 12, 10),
        [("Buddha Bowl", 1), ("Green Smoothie", 1)],
        100,
    ),
    (
        1,
        1,
        1,
        5,
        "delivered",
        datetime(2025, 9, 8, 20, 0),
        [("Pepperoni Pizza", 2), ("Tiramisu", 1)],
        300,
    ),
    (
        5,
        1,
        7,
        None,
        "delivered",
        datetime(2025, 9, 2, 19, 15),
        [("Palak Paneer", 1), ("Vegetable Samosa", 2)],
        200,
    ),
    (
        2,
        1,
        2,
        None,
        "delivered",
        datetime(2025, 8, 28, 19, 40),
        [("Tuna Sashimi", 1), ("Edamame", 1)],
        250,
    ),
    (
        10,
        1,
        6,
        None,
        "delivered",
        datetime(2025, 8, 20, 18, 50),
        [("Gyros Plate", 1), ("Baklava", 1)],
        200,
    ),
    (
        5,
        2,
        3,
        None,
        "delivered",
        datetime(2025, 8, 14, 12, 30),
        [("Lamb Rogan Josh", 1), ("Mango Lassi", 1)],
        150,
    ),
    (
        1,
        1,
        4,
        None,
        "delivered",
        datetime(2025, 8, 5, 20, 10),
        [("Quattro Formaggi Pizza", 1), ("Garlic Bread", 1)],
        200,
    ),
    (3, 1, 5, None, "delivered", datetime(2025, 7, 30, 12, 20), [("Falafel Wrap", 2)], 100),
    (4, 2, None, None, "cancelled", datetime(2025, 9, 28, 13, 0), [("Beef Tacos", 2)], 0),
    (
        4,
        2,
        8,
        None,
        "preparing",
        datetime(2025, 10, 10, 18, 10),
        [("Veggie Burrito", 1), ("Churros", 1)],
        200,
    ),
    (
        10,
        1,
        None,
        None,
        "placed",
        datetime(2025, 10, 10, 18, 25),
        [("Moussaka", 1), ("Greek Salad", 1)],
        150,
    ),
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20251010)
    w = SeedWriter(
        "Food delivery seed data. Reference time 2025-10-10T18:30:00Z; the logged-in customer is 1."
    )
    customers = [
        (1, "Elena Sokolova", "elena.sokolova@example.com", "+1-555-0300", "2023-05-14T10:00:00Z")
    ]
    for i, name in enumerate(OTHERS, start=2):
        local = name.lower().replace(" ", ".").replace("'", "")
        customers.append(
            (
                i,
                name,
                f"{local}{'' if name != 'Elena Sokolova' else '.b'}@example.com",
                f"+1-555-03{i:02d}",
                ts(REF - timedelta(days=rng.randint(30, 900))),
            )
        )
    w.add("customers", ("customer_id", "name", "email", "phone", "created_at"), customers)
    zones = ["center", "north", "east", "south"]
    addresses = [
        (1, 1, "Home", "14 Linden Street, Apt 3", "center", 1),
        (2, 1, "Office", "200 Harbor Plaza, Floor 9", "north", 0),
    ]
    home_of = {1: 1}
    for cid in range(2, len(customers) + 1):
        addresses.append(
            (
                len(addresses) + 1,
                cid,
                "Home",
                f"{rng.randint(1, 400)} {rng.choice(['Oak', 'Pine', 'Elm', 'Birch'])} Road",
                rng.choice(zones),
                1,
            )
        )
        home_of[cid] = len(addresses)
    w.add(
        "addresses",
        ("address_id", "customer_id", "label", "line1", "zone", "is_default"),
        addresses,
    )
    w.add(
        "restaurants",
        (
            "restaurant_id",
            "name",
            "cuisine",
            "delivery_zones",
            "opens_at",
            "closes_at",
            "is_open",
            "min_order_cents",
            "delivery_fee_cents",
            "rating",
        ),
        RESTAURANTS,
    )
    items = []
    item_id: dict[tuple[int, str], int] = {}
    for rid, menu in MENUS.items():
        for name, cat, price, veg, avail in menu:
            items.append((len(items) + 1, rid, name, cat, price, veg, avail))
            item_id[(rid, name)] = len(items)
    w.add(
        "menu_items",
        (
            "item_id",
            "restaurant_id",
            "name",
            "category",
            "price_cents",
            "is_vegetarian",
            "is_available",
        ),
        items,
    )
    price = {i[0]: i[4] for i in items}
    w.add("couriers", ("courier_id", "name", "vehicle", "rating"), COURIERS)
    w.add(
        "promo_codes",
        (
            "promo_id",
            "code",
            "percent_off",
            "max_discount_cents",
            "min_subtotal_cents",
            "valid_from",
            "valid_until",
            "restaurant_id",
            "max_uses_per_customer",
            "is_active",
        ),
        PROMOS,
    )

    orders, lines = [], []
    fee = {r[0]: r[8] for r in RESTAURANTS}

    def add_order(cid, rid, addr, courier, promo, status, placed, basket, tip):
        oid = len(orders) + 1
        subtotal = 0
        for name, qty in basket:
            iid = item_id[(rid, name)]
            lines.append((len(lines) + 1, oid, iid, qty, price[iid]))
            subtotal += price[iid] * qty
        discount = 0
        if promo:
            p = PROMOS[promo - 1]
            discount = min(subtotal * p[2] // 100, p[3])
        delivered = (
            ts(placed + timedelta(minutes=rng.randint(28, 50))) if status == "delivered" else None
        )
        cancelled = ts(placed + timedelta(minutes=4)) if status == "cancelled" else None
        total = subtotal - discount + fee[rid] + tip
        orders.append(
            (
                oid,
                cid,
                rid,
                addr,
                courier,
                promo,
                status,
                subtotal,
                fee[rid],
                discount,
                tip,
                total,
                ts(placed),
                delivered,
                cancelled,
            )
        )

    for order in ELENA_ORDERS:
        add_order(1, *order)
    open_rids = [r[0] for r in RESTAURANTS if r[6]]
    for cid in range(2, len(customers) + 1):
        for _ in range(rng.randint(1, 4)):
            rid = rng.choice(open_rids)
            basket = [
                (n, rng.randint(1, 2))
                for n, *_ in rng.sample(MENUS[rid], k=min(2, len(MENUS[rid])))
            ]
            status = rng.choice(
                ["delivered", "delivered", "delivered", "cancelled", "out_for_delivery"]
            )
            placed = REF - timedelta(days=rng.randint(0, 60), minutes=rng.randint(20, 600))
            if status == "out_for_delivery":
                placed = REF - timedelta(minutes=rng.randint(15, 40))
            add_order(
                cid,
                rid,
                home_of[cid],
                rng.randint(1, 8) if status != "cancelled" else None,
                None,
                status,
                placed,
                basket,
                rng.choice([0, 100, 200, 300]),
            )
    w.add(
        "orders",
        (
            "order_id",
            "customer_id",
            "restaurant_id",
            "address_id",
            "courier_id",
            "promo_id",
            "status",
            "subtotal_cents",
            "delivery_fee_cents",
            "discount_cents",
            "tip_cents",
            "total_cents",
            "placed_at",
            "delivered_at",
            "cancelled_at",
        ),
        orders,
    )
    w.add(
        "order_items",
        ("order_item_id", "order_id", "item_id", "quantity", "unit_price_cents"),
        lines,
    )

    reviews = [
        (1, 2, 1, 5, 5, "Perfect crust, arrived hot.", "2025-09-27T21:00:00Z"),
        (2, 4, 1, 4, 5, "Great rolls, soup was a bit cold.", "2025-09-19T14:00:00Z"),
    ]
    for o in orders[len(ELENA_ORDERS) :]:
        if o[6] == "delivered" and rng.random() < 0.5:
            reviews.append(
                (
                    len(reviews) + 1,
                    o[0],
                    o[1],
                    rng.randint(2, 5),
                    rng.randint(3, 5),
                    rng.choice(
                        [
                            "Tasty!",
                            "Late but good.",
                            "Cold fries.",
                            "Will order again.",
                            "Portions too small.",
                        ]
                    ),
                    o[13],
                )
            )
    w.add(
        "reviews",
        (
            "review_id",
            "order_id",
            "customer_id",
            "restaurant_rating",
            "courier_rating",
            "comment",
            "created_at",
        ),
        reviews,
    )

    cart = [
        (1, 1, item_id[(1, "Margherita Pizza")], 2, "", "2025-10-10T18:05:00Z"),
        (2, 1, item_id[(1, "Tiramisu")], 1, "", "2025-10-10T18:06:00Z"),
    ]
    for cid in range(2, len(customers) + 1, 3):
        rid = rng.choice(open_rids)
        for n, *_ in rng.sample(MENUS[rid], k=min(2, len(MENUS[rid]))):
            cart.append(
                (
                    len(cart) + 1,
                    cid,
                    item_id[(rid, n)],
                    rng.randint(1, 3),
                    "",
                    ts(REF - timedelta(minutes=rng.randint(5, 300))),
                )
            )
    w.add(
        "cart_items",
        ("cart_item_id", "customer_id", "item_id", "quantity", "note", "added_at"),
        cart,
    )

    favorites = [(1, 1, "2025-08-06T09:00:00Z"), (1, 6, "2025-05-02T09:00:00Z")]
    for cid in range(2, len(customers) + 1):
        for rid in rng.sample([r[0] for r in RESTAURANTS], k=rng.randint(0, 3)):
            favorites.append((cid, rid, ts(REF - timedelta(days=rng.randint(1, 200)))))
    w.add("favorites", ("customer_id", "restaurant_id", "added_at"), favorites)
    return w


def main() -> None:
    w = build()
    path = w.write("food")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
