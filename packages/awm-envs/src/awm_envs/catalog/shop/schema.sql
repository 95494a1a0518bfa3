-- Online shop: one logged-in customer (user 1) among many.
-- Money is stored in integer cents (USD); times are ISO-8601 UTC strings.

CREATE TABLE users (
    user_id     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL
);

CREATE TABLE addresses (
    address_id   INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(user_id),
    label        TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    line1        TEXT NOT NULL,
    city         TEXT NOT NULL,
    postal_code  TEXT NOT NULL,
    country      TEXT NOT NULL,
    is_default   INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1))
);
CREATE INDEX ix_addresses_user ON addresses(user_id);

CREATE TABLE categories (
    category_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    parent_id    INTEGER REFERENCES categories(category_id)
);
CREATE INDEX ix_categories_parent ON categories(parent_id);

CREATE TABLE products (
    product_id   INTEGER PRIMARY KEY,
    category_id  INTEGER NOT NULL REFERENCES categories(category_id),
    sku          TEXT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    brand        TEXT NOT NULL,
    description  TEXT NOT NULL,
    price_cents  INTEGER NOT NULL CHECK (price_cents > 0),
    stock        INTEGER NOT NULL CHECK (stock >= 0),
    is_active    INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_at   TEXT NOT NULL
);
CREATE INDEX ix_products_category ON products(category_id);
CREATE INDEX ix_products_name ON products(name);

CREATE TABLE reviews (
    review_id    INTEGER PRIMARY KEY,
    product_id   INTEGER NOT NULL REFERENCES products(product_id),
    user_id      INTEGER NOT NULL REFERENCES users(user_id),
    rating       INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (product_id, user_id)
);
CREATE INDEX ix_reviews_user ON reviews(user_id);

CREATE TABLE coupons (
    coupon_id           INTEGER PRIMARY KEY,
    code                TEXT NOT NULL UNIQUE,
    percent_off         INTEGER NOT NULL CHECK (percent_off BETWEEN 1 AND 90),
    min_subtotal_cents  INTEGER NOT NULL DEFAULT 0,
    valid_from          TEXT NOT NULL,
    valid_until         TEXT NOT NULL,
    max_uses            INTEGER NOT NULL,
    times_used          INTEGER NOT NULL DEFAULT 0,
    is_active           INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);

CREATE TABLE cart_items (
    cart_item_id  INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users(user_id),
    product_id    INTEGER NOT NULL REFERENCES products(product_id),
    quantity      INTEGER NOT NULL CHECK (quantity > 0),
    added_at      TEXT NOT NULL,
    UNIQUE (user_id, product_id)
);

CREATE TABLE wishlist_items (
    wishlist_item_id  INTEGER PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users(user_id),
    product_id        INTEGER NOT NULL REFERENCES products(product_id),
    added_at          TEXT NOT NULL,
    UNIQUE (user_id, product_id)
);

CREATE TABLE orders (
    order_id        INTEGER PRIMARY KEY,
    user_id         INTEGER NOT NULL REFERENCES users(user_id),
    address_id      INTEGER NOT NULL REFERENCES addresses(address_id),
    coupon_id       INTEGER REFERENCES coupons(coupon_id),
    status          TEXT NOT NULL CHECK (status IN ('paid', 'shipped', 'delivered', 'cancelled')),
    subtotal_cents  INTEGER NOT NULL,
    discount_cents  INTEGER NOT NULL DEFAULT 0,
    total_cents     INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    shipped_at      TEXT,
    delivered_at    TEXT,
    cancelled_at    TEXT,
    cancel_reason   TEXT
);
CREATE INDEX ix_orders_user_status ON orders(user_id, status);

CREATE TABLE order_items (
    order_item_id     INTEGER PRIMARY KEY,
    order_id          INTEGER NOT NULL REFERENCES orders(order_id),
    product_id        INTEGER NOT NULL REFERENCES products(product_id),
    quantity          INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents  INTEGER NOT NULL
);
CREATE INDEX ix_order_items_order ON order_items(order_id);

CREATE TABLE returns (
    return_id      INTEGER PRIMARY KEY,
    order_item_id  INTEGER NOT NULL REFERENCES order_items(order_item_id),
    quantity       INTEGER NOT NULL CHECK (quantity > 0),
    reason         TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('requested', 'approved', 'rejected', 'refunded')),
    created_at     TEXT NOT NULL
);
CREATE INDEX ix_returns_item ON returns(order_item_id);
