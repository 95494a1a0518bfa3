-- Food delivery: one logged-in customer (customer 1) among many.
-- Money is integer cents (USD). Times are ISO-8601 UTC strings; opening hours are HH:MM UTC.

CREATE TABLE customers (
    customer_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    phone        TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE addresses (
    address_id   INTEGER PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers(customer_id),
    label        TEXT NOT NULL,
    line1        TEXT NOT NULL,
    zone         TEXT NOT NULL CHECK (zone IN ('center', 'north', 'east', 'south')),
    is_default   INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1))
);
CREATE INDEX ix_addresses_customer ON addresses(customer_id);

CREATE TABLE restaurants (
    restaurant_id       INTEGER PRIMARY KEY,
    name                TEXT NOT NULL,
    cuisine             TEXT NOT NULL,
    delivery_zones      TEXT NOT NULL,
    opens_at            TEXT NOT NULL,
    closes_at           TEXT NOT NULL,
    is_open             INTEGER NOT NULL DEFAULT 1 CHECK (is_open IN (0, 1)),
    min_order_cents     INTEGER NOT NULL CHECK (min_order_cents >= 0),
    delivery_fee_cents  INTEGER NOT NULL CHECK (delivery_fee_cents >= 0),
    rating              REAL NOT NULL
);
CREATE INDEX ix_restaurants_cuisine ON restaurants(cuisine);

CREATE TABLE menu_items (
    item_id        INTEGER PRIMARY KEY,
    restaurant_id  INTEGER NOT NULL REFERENCES restaurants(restaurant_id),
    name           TEXT NOT NULL,
    category       TEXT NOT NULL,
    price_cents    INTEGER NOT NULL CHECK (price_cents > 0),
    is_vegetarian  INTEGER NOT NULL DEFAULT 0 CHECK (is_vegetarian IN (0, 1)),
    is_available   INTEGER NOT NULL DEFAULT 1 CHECK (is_available IN (0, 1))
);
CREATE INDEX ix_menu_items_restaurant ON menu_items(restaurant_id);

CREATE TABLE couriers (
    courier_id  INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    vehicle     TEXT NOT NULL CHECK (vehicle IN ('bike', 'scooter', 'car')),
    rating      REAL NOT NULL
);

CREATE TABLE promo_codes (
    promo_id               INTEGER PRIMARY KEY,
    code                   TEXT NOT NULL UNIQUE,
    percent_off            INTEGER NOT NULL CHECK (percent_off BETWEEN 1 AND 100),
    max_discount_cents     INTEGER NOT NULL CHECK (max_discount_cents > 0),
    min_subtotal_cents     INTEGER NOT NULL DEFAULT 0,
    valid_from             TEXT NOT NULL,
    valid_until            TEXT NOT NULL,
    restaurant_id          INTEGER REFERENCES restaurants(restaurant_id),
    max_uses_per_customer  INTEGER NOT NULL CHECK (max_uses_per_customer > 0),
    is_active              INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);

CREATE TABLE orders (
    order_id            INTEGER PRIMARY KEY,
    customer_id         INTEGER NOT NULL REFERENCES customers(customer_id),
    restaurant_id       INTEGER NOT NULL REFERENCES restaurants(restaurant_id),
    address_id          INTEGER NOT NULL REFERENCES addresses(address_id),
    courier_id          INTEGER REFERENCES couriers(courier_id),
    promo_id            INTEGER REFERENCES promo_codes(promo_id),
    status              TEXT NOT NULL CHECK (status IN ('placed', 'preparing', 'out_for_delivery', 'delivered', 'cancelled')),
    subtotal_cents      INTEGER NOT NULL,
    delivery_fee_cents  INTEGER NOT NULL,
    discount_cents      INTEGER NOT NULL DEFAULT 0,
    tip_cents           INTEGER NOT NULL DEFAULT 0 CHECK (tip_cents >= 0),
    total_cents         INTEGER NOT NULL,
    placed_at           TEXT NOT NULL,
    delivered_at        TEXT,
    cancelled_at        TEXT
);
CREATE INDEX ix_orders_customer ON orders(customer_id, status);

CREATE TABLE order_items (
    order_item_id     INTEGER PRIMARY KEY,
    order_id          INTEGER NOT NULL REFERENCES orders(order_id),
    item_id           INTEGER NOT NULL REFERENCES menu_items(item_id),
    quantity          INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents  INTEGER NOT NULL
);
CREATE INDEX ix_order_items_order ON order_items(order_id);

CREATE TABLE reviews (
    review_id          INTEGER PRIMARY KEY,
    order_id           INTEGER NOT NULL UNIQUE REFERENCES orders(order_id),
    customer_id        INTEGER NOT NULL REFERENCES customers(customer_id),
    restaurant_rating  INTEGER NOT NULL CHECK (restaurant_rating BETWEEN 1 AND 5),
    courier_rating     INTEGER CHECK (courier_rating BETWEEN 1 AND 5),
    comment            TEXT NOT NULL DEFAULT '',
    created_at         TEXT NOT NULL
);

CREATE TABLE cart_items (
    cart_item_id  INTEGER PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(customer_id),
    item_id       INTEGER NOT NULL REFERENCES menu_items(item_id),
    quantity      INTEGER NOT NULL CHECK (quantity > 0),
    note          TEXT NOT NULL DEFAULT '',
    added_at      TEXT NOT NULL,
    UNIQUE (customer_id, item_id)
);

CREATE TABLE favorites (
    customer_id    INTEGER NOT NULL REFERENCES customers(customer_id),
    restaurant_id  INTEGER NOT NULL REFERENCES restaurants(restaurant_id),
    added_at       TEXT NOT NULL,
    PRIMARY KEY (customer_id, restaurant_id)
);
