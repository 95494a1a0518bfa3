-- Apartment rentals: one logged-in renter (user 1) among many.
-- Money is integer cents (USD). Times are ISO-8601 UTC strings; dates are YYYY-MM-DD.

CREATE TABLE users (
    user_id    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    phone      TEXT NOT NULL,
    joined_at  TEXT NOT NULL
);

CREATE TABLE landlords (
    landlord_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    phone        TEXT NOT NULL
);

CREATE TABLE properties (
    property_id    INTEGER PRIMARY KEY,
    landlord_id    INTEGER NOT NULL REFERENCES landlords(landlord_id),
    name           TEXT NOT NULL,
    address        TEXT NOT NULL,
    neighborhood   TEXT NOT NULL,
    pets_allowed   INTEGER NOT NULL CHECK (pets_allowed IN (0, 1)),
    has_parking    INTEGER NOT NULL CHECK (has_parking IN (0, 1))
);
CREATE INDEX ix_properties_neighborhood ON properties(neighborhood);

CREATE TABLE units (
    unit_id      INTEGER PRIMARY KEY,
    property_id  INTEGER NOT NULL REFERENCES properties(property_id),
    unit_number  TEXT NOT NULL,
    bedrooms     INTEGER NOT NULL CHECK (bedrooms >= 0),
    bathrooms    REAL NOT NULL CHECK (bathrooms > 0),
    sqft         INTEGER NOT NULL CHECK (sqft > 0),
    UNIQUE (property_id, unit_number)
);

CREATE TABLE listings (
    listing_id          INTEGER PRIMARY KEY,
    unit_id             INTEGER NOT NULL REFERENCES units(unit_id),
    monthly_rent_cents  INTEGER NOT NULL CHECK (monthly_rent_cents > 0),
    deposit_cents       INTEGER NOT NULL CHECK (deposit_cents >= 0),
    available_from      TEXT NOT NULL,
    min_lease_months    INTEGER NOT NULL CHECK (min_lease_months > 0),
    status              TEXT NOT NULL CHECK (status IN ('active', 'rented', 'withdrawn')),
    listed_at           TEXT NOT NULL
);
CREATE INDEX ix_listings_status_rent ON listings(status, monthly_rent_cents);

CREATE TABLE saved_listings (
    saved_id    INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users(user_id),
    listing_id  INTEGER NOT NULL REFERENCES listings(listing_id),
    saved_at    TEXT NOT NULL,
    UNIQUE (user_id, listing_id)
);

CREATE TABLE viewings (
    viewing_id    INTEGER PRIMARY KEY,
    listing_id    INTEGER NOT NULL REFERENCES listings(listing_id),
    user_id       INTEGER NOT NULL REFERENCES users(user_id),
    scheduled_at  TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('scheduled', 'completed', 'cancelled')),
    created_at    TEXT NOT NULL
);
CREATE INDEX ix_viewings_listing_time ON viewings(listing_id, scheduled_at);
CREATE INDEX ix_viewings_user ON viewings(user_id, status);

CREATE TABLE applications (
    application_id         INTEGER PRIMARY KEY,
    listing_id             INTEGER NOT NULL REFERENCES listings(listing_id),
    user_id                INTEGER NOT NULL REFERENCES users(user_id),
    monthly_income_cents   INTEGER NOT NULL CHECK (monthly_income_cents > 0),
    move_in_date           TEXT NOT NULL,
    note                   TEXT NOT NULL DEFAULT '',
    status                 TEXT NOT NULL CHECK (status IN ('submitted', 'approved', 'rejected', 'withdrawn')),
    submitted_at           TEXT NOT NULL
);
CREATE INDEX ix_applications_user ON applications(user_id, status);

CREATE TABLE leases (
    lease_id            INTEGER PRIMARY KEY,
    unit_id             INTEGER NOT NULL REFERENCES units(unit_id),
    tenant_id           INTEGER NOT NULL REFERENCES users(user_id),
    start_date          TEXT NOT NULL,
    end_date            TEXT NOT NULL,
    monthly_rent_cents  INTEGER NOT NULL,
    deposit_cents       INTEGER NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('active', 'ended')),
    notice_given_on     TEXT,
    move_out_date       TEXT
);
CREATE INDEX ix_leases_tenant ON leases(tenant_id);

CREATE TABLE rent_invoices (
    invoice_id      INTEGER PRIMARY KEY,
    lease_id        INTEGER NOT NULL REFERENCES leases(lease_id),
    period          TEXT NOT NULL,
    amount_cents    INTEGER NOT NULL CHECK (amount_cents > 0),
    due_date        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('open', 'paid')),
    late_fee_cents  INTEGER NOT NULL DEFAULT 0,
    paid_at         TEXT,
    UNIQUE (lease_id, period)
);

CREATE TABLE maintenance_requests (
    request_id       INTEGER PRIMARY KEY,
    lease_id         INTEGER NOT NULL REFERENCES leases(lease_id),
    category         TEXT NOT NULL CHECK (category IN ('plumbing', 'electrical', 'appliance', 'heating_cooling', 'pest', 'other')),
    description      TEXT NOT NULL,
    priority         TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'urgent')),
    entry_permitted  INTEGER NOT NULL CHECK (entry_permitted IN (0, 1)),
    status           TEXT NOT NULL CHECK (status IN ('open', 'scheduled', 'resolved', 'cancelled')),
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX ix_maintenance_lease ON maintenance_requests(lease_id, status);
