-- Event ticketing: one logged-in customer (customer 1) among many.
-- Money is integer cents (USD). Times are ISO-8601 UTC strings.

CREATE TABLE customers (
    customer_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL
);

CREATE TABLE venues (
    venue_id  INTEGER PRIMARY KEY,
    name      TEXT NOT NULL,
    city      TEXT NOT NULL,
    address   TEXT NOT NULL
);

CREATE TABLE sections (
    section_id  INTEGER PRIMARY KEY,
    venue_id    INTEGER NOT NULL REFERENCES venues(venue_id),
    code        TEXT NOT NULL,
    name        TEXT NOT NULL,
    seat_count  INTEGER NOT NULL CHECK (seat_count > 0),
    UNIQUE (venue_id, code)
);

CREATE TABLE events (
    event_id          INTEGER PRIMARY KEY,
    venue_id          INTEGER NOT NULL REFERENCES venues(venue_id),
    name              TEXT NOT NULL,
    performer         TEXT NOT NULL,
    category          TEXT NOT NULL CHECK (category IN ('concert', 'sports', 'theatre', 'comedy')),
    starts_at         TEXT NOT NULL,
    sales_start_at    TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('scheduled', 'cancelled', 'postponed')),
    max_per_customer  INTEGER NOT NULL CHECK (max_per_customer > 0)
);
CREATE INDEX ix_events_starts ON events(starts_at);
CREATE INDEX ix_events_venue ON events(venue_id);

CREATE TABLE ticket_tiers (
    tier_id       INTEGER PRIMARY KEY,
    event_id      INTEGER NOT NULL REFERENCES events(event_id),
    section_id    INTEGER NOT NULL REFERENCES sections(section_id),
    name          TEXT NOT NULL,
    price_cents   INTEGER NOT NULL CHECK (price_cents > 0),
    quantity      INTEGER NOT NULL CHECK (quantity > 0),
    refundable    INTEGER NOT NULL CHECK (refundable IN (0, 1)),
    UNIQUE (event_id, section_id)
);

CREATE TABLE promo_codes (
    promo_id      INTEGER PRIMARY KEY,
    code          TEXT NOT NULL UNIQUE,
    event_id      INTEGER REFERENCES events(event_id),
    percent_off   INTEGER NOT NULL CHECK (percent_off BETWEEN 1 AND 90),
    valid_from    TEXT NOT NULL,
    valid_until   TEXT NOT NULL,
    max_uses      INTEGER NOT NULL CHECK (max_uses > 0),
    used_count    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE orders (
    order_id        INTEGER PRIMARY KEY,
    customer_id     INTEGER NOT NULL REFERENCES customers(customer_id),
    event_id        INTEGER NOT NULL REFERENCES events(event_id),
    promo_id        INTEGER REFERENCES promo_codes(promo_id),
    status          TEXT NOT NULL CHECK (status IN ('paid', 'partially_refunded', 'refunded')),
    subtotal_cents  INTEGER NOT NULL,
    discount_cents  INTEGER NOT NULL DEFAULT 0,
    total_cents     INTEGER NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX ix_orders_customer ON orders(customer_id, created_at);

CREATE TABLE tickets (
    ticket_id           INTEGER PRIMARY KEY,
    order_id            INTEGER NOT NULL REFERENCES orders(order_id),
    tier_id             INTEGER NOT NULL REFERENCES ticket_tiers(tier_id),
    holder_customer_id  INTEGER NOT NULL REFERENCES customers(customer_id),
    seat_label          TEXT NOT NULL,
    price_paid_cents    INTEGER NOT NULL,
    attendee_name       TEXT,
    status              TEXT NOT NULL CHECK (status IN ('valid', 'transfer_pending', 'used', 'refunded')),
    barcode             TEXT NOT NULL UNIQUE
);
CREATE INDEX ix_tickets_holder ON tickets(holder_customer_id, status);
CREATE INDEX ix_tickets_tier ON tickets(tier_id, status);

CREATE TABLE transfers (
    transfer_id       INTEGER PRIMARY KEY,
    ticket_id         INTEGER NOT NULL REFERENCES tickets(ticket_id),
    from_customer_id  INTEGER NOT NULL REFERENCES customers(customer_id),
    to_email          TEXT NOT NULL,
    to_customer_id    INTEGER REFERENCES customers(customer_id),
    status            TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'cancelled')),
    created_at        TEXT NOT NULL,
    resolved_at       TEXT
);
CREATE INDEX ix_transfers_ticket ON transfers(ticket_id, status);

CREATE TABLE refunds (
    refund_id     INTEGER PRIMARY KEY,
    order_id      INTEGER NOT NULL REFERENCES orders(order_id),
    ticket_id     INTEGER NOT NULL REFERENCES tickets(ticket_id),
    amount_cents  INTEGER NOT NULL CHECK (amount_cents >= 0),
    reason        TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX ix_refunds_order ON refunds(order_id);
