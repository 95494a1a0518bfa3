-- Travel booking: one logged-in customer (customer 1) among many.
-- Money is integer cents (USD); 1 loyalty point pays for 1 cent. Times are ISO-8601 UTC
-- strings; dates and hotel nights are YYYY-MM-DD (a night is the date it starts).

CREATE TABLE airports (
    airport_code  TEXT PRIMARY KEY,
    city          TEXT NOT NULL,
    country       TEXT NOT NULL
);

CREATE TABLE customers (
    customer_id     INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    email           TEXT NOT NULL UNIQUE,
    loyalty_tier    TEXT NOT NULL CHECK (loyalty_tier IN ('basic', 'silver', 'gold')),
    points_balance  INTEGER NOT NULL CHECK (points_balance >= 0),
    created_at      TEXT NOT NULL
);

CREATE TABLE flights (
    flight_id          INTEGER PRIMARY KEY,
    flight_number      TEXT NOT NULL,
    origin_code        TEXT NOT NULL REFERENCES airports(airport_code),
    destination_code   TEXT NOT NULL REFERENCES airports(airport_code),
    departs_at         TEXT NOT NULL,
    arrives_at         TEXT NOT NULL,
    fare_basic_cents   INTEGER NOT NULL CHECK (fare_basic_cents > 0),
    fare_flex_cents    INTEGER NOT NULL CHECK (fare_flex_cents > 0),
    seats_available    INTEGER NOT NULL CHECK (seats_available >= 0),
    status             TEXT NOT NULL CHECK (status IN ('scheduled', 'cancelled', 'departed'))
);
CREATE INDEX ix_flights_route_time ON flights(origin_code, destination_code, departs_at);

CREATE TABLE hotels (
    hotel_id      INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    city          TEXT NOT NULL,
    airport_code  TEXT NOT NULL REFERENCES airports(airport_code),
    stars         INTEGER NOT NULL CHECK (stars BETWEEN 1 AND 5)
);
CREATE INDEX ix_hotels_city ON hotels(city);

CREATE TABLE room_types (
    room_type_id        INTEGER PRIMARY KEY,
    hotel_id            INTEGER NOT NULL REFERENCES hotels(hotel_id),
    name                TEXT NOT NULL,
    nightly_rate_cents  INTEGER NOT NULL CHECK (nightly_rate_cents > 0),
    free_cancel_hours   INTEGER NOT NULL CHECK (free_cancel_hours >= 0)
);

CREATE TABLE room_nights (
    room_type_id  INTEGER NOT NULL REFERENCES room_types(room_type_id),
    night         TEXT NOT NULL,
    rooms_left    INTEGER NOT NULL CHECK (rooms_left >= 0),
    PRIMARY KEY (room_type_id, night)
);

CREATE TABLE passengers (
    passenger_id      INTEGER PRIMARY KEY,
    customer_id       INTEGER NOT NULL REFERENCES customers(customer_id),
    full_name         TEXT NOT NULL,
    date_of_birth     TEXT NOT NULL,
    passport_number   TEXT,
    passport_expires  TEXT
);
CREATE INDEX ix_passengers_customer ON passengers(customer_id);

CREATE TABLE bookings (
    booking_id   INTEGER PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers(customer_id),
    reference    TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL CHECK (status IN ('confirmed', 'completed', 'cancelled')),
    created_at   TEXT NOT NULL
);
CREATE INDEX ix_bookings_customer ON bookings(customer_id, status);

CREATE TABLE tickets (
    ticket_id     INTEGER PRIMARY KEY,
    booking_id    INTEGER NOT NULL REFERENCES bookings(booking_id),
    flight_id     INTEGER NOT NULL REFERENCES flights(flight_id),
    passenger_id  INTEGER NOT NULL REFERENCES passengers(passenger_id),
    fare_type     TEXT NOT NULL CHECK (fare_type IN ('basic', 'flex')),
    price_cents   INTEGER NOT NULL CHECK (price_cents >= 0),
    paid_with     TEXT NOT NULL CHECK (paid_with IN ('card', 'points')),
    status        TEXT NOT NULL CHECK (status IN ('issued', 'flown', 'cancelled'))
);
CREATE INDEX ix_tickets_booking ON tickets(booking_id);
CREATE INDEX ix_tickets_flight ON tickets(flight_id);

CREATE TABLE hotel_stays (
    stay_id       INTEGER PRIMARY KEY,
    booking_id    INTEGER NOT NULL REFERENCES bookings(booking_id),
    room_type_id  INTEGER NOT NULL REFERENCES room_types(room_type_id),
    check_in      TEXT NOT NULL,
    check_out     TEXT NOT NULL,
    rooms         INTEGER NOT NULL CHECK (rooms > 0),
    price_cents   INTEGER NOT NULL CHECK (price_cents >= 0),
    paid_with     TEXT NOT NULL CHECK (paid_with IN ('card', 'points')),
    status        TEXT NOT NULL CHECK (status IN ('confirmed', 'completed', 'cancelled')),
    CHECK (check_out > check_in)
);
CREATE INDEX ix_stays_booking ON hotel_stays(booking_id);

CREATE TABLE payments (
    payment_id    INTEGER PRIMARY KEY,
    booking_id    INTEGER NOT NULL REFERENCES bookings(booking_id),
    amount_cents  INTEGER NOT NULL,
    method        TEXT NOT NULL CHECK (method IN ('card', 'points')),
    kind          TEXT NOT NULL CHECK (kind IN ('charge', 'refund')),
    created_at    TEXT NOT NULL,
    note          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ix_payments_booking ON payments(booking_id);

CREATE TABLE loyalty_ledger (
    entry_id     INTEGER PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers(customer_id),
    booking_id   INTEGER REFERENCES bookings(booking_id),
    points       INTEGER NOT NULL,
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX ix_ledger_customer ON loyalty_ledger(customer_id);
