-- Personal banking: one logged-in customer (customer 1) among many.
-- Money is integer cents; a credit account's negative balance is the amount owed.
-- Times are ISO-8601 UTC strings.

CREATE TABLE customers (
    customer_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    phone        TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE accounts (
    account_id              INTEGER PRIMARY KEY,
    customer_id             INTEGER NOT NULL REFERENCES customers(customer_id),
    account_number          TEXT NOT NULL UNIQUE,
    type                    TEXT NOT NULL CHECK (type IN ('checking', 'savings', 'credit')),
    nickname                TEXT NOT NULL,
    balance_cents           INTEGER NOT NULL,
    credit_limit_cents      INTEGER NOT NULL DEFAULT 0,
    status                  TEXT NOT NULL CHECK (status IN ('active', 'frozen', 'closed')),
    opened_at               TEXT NOT NULL
);
CREATE INDEX ix_accounts_customer ON accounts(customer_id);

CREATE TABLE payees (
    payee_id        INTEGER PRIMARY KEY,
    customer_id     INTEGER NOT NULL REFERENCES customers(customer_id),
    name            TEXT NOT NULL,
    account_number  TEXT NOT NULL,
    bank_name       TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    UNIQUE (customer_id, account_number)
);
CREATE INDEX ix_payees_customer ON payees(customer_id);

CREATE TABLE transfers (
    transfer_id      INTEGER PRIMARY KEY,
    from_account_id  INTEGER NOT NULL REFERENCES accounts(account_id),
    to_account_id    INTEGER REFERENCES accounts(account_id),
    payee_id         INTEGER REFERENCES payees(payee_id),
    amount_cents     INTEGER NOT NULL CHECK (amount_cents > 0),
    memo             TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('completed', 'scheduled', 'cancelled')),
    scheduled_for    TEXT,
    created_at       TEXT NOT NULL,
    CHECK ((to_account_id IS NULL) <> (payee_id IS NULL))
);
CREATE INDEX ix_transfers_from ON transfers(from_account_id, status);

CREATE TABLE transactions (
    transaction_id  INTEGER PRIMARY KEY,
    account_id      INTEGER NOT NULL REFERENCES accounts(account_id),
    transfer_id     INTEGER REFERENCES transfers(transfer_id),
    posted_at       TEXT NOT NULL,
    amount_cents    INTEGER NOT NULL,
    merchant        TEXT NOT NULL,
    category        TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ix_transactions_account_posted ON transactions(account_id, posted_at);
CREATE INDEX ix_transactions_merchant ON transactions(merchant);

CREATE TABLE cards (
    card_id            INTEGER PRIMARY KEY,
    account_id         INTEGER NOT NULL REFERENCES accounts(account_id),
    last4              TEXT NOT NULL,
    type               TEXT NOT NULL CHECK (type IN ('debit', 'credit')),
    status             TEXT NOT NULL CHECK (status IN ('active', 'locked', 'reported_lost', 'expired')),
    expires            TEXT NOT NULL,
    daily_limit_cents  INTEGER NOT NULL,
    replaces_card_id   INTEGER REFERENCES cards(card_id)
);
CREATE INDEX ix_cards_account ON cards(account_id);

CREATE TABLE budgets (
    budget_id            INTEGER PRIMARY KEY,
    customer_id          INTEGER NOT NULL REFERENCES customers(customer_id),
    category             TEXT NOT NULL,
    monthly_limit_cents  INTEGER NOT NULL CHECK (monthly_limit_cents > 0),
    UNIQUE (customer_id, category)
);

CREATE TABLE disputes (
    dispute_id      INTEGER PRIMARY KEY,
    transaction_id  INTEGER NOT NULL REFERENCES transactions(transaction_id),
    reason          TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'rejected')),
    created_at      TEXT NOT NULL
);
CREATE INDEX ix_disputes_transaction ON disputes(transaction_id);

CREATE TABLE alerts (
    alert_id         INTEGER PRIMARY KEY,
    account_id       INTEGER NOT NULL REFERENCES accounts(account_id),
    kind             TEXT NOT NULL CHECK (kind IN ('low_balance', 'large_transaction')),
    threshold_cents  INTEGER NOT NULL CHECK (threshold_cents > 0),
    is_enabled       INTEGER NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
    UNIQUE (account_id, kind)
);
