-- Clinic appointments: one logged-in patient (patient 1) among many.
-- Money is integer cents (USD). Times are ISO-8601 UTC strings; dates are YYYY-MM-DD.

CREATE TABLE specialties (
    specialty_id  INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE
);

CREATE TABLE locations (
    location_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    address      TEXT NOT NULL,
    city         TEXT NOT NULL,
    is_open      INTEGER NOT NULL DEFAULT 1 CHECK (is_open IN (0, 1))
);

CREATE TABLE doctors (
    doctor_id               INTEGER PRIMARY KEY,
    name                    TEXT NOT NULL,
    specialty_id            INTEGER NOT NULL REFERENCES specialties(specialty_id),
    location_id             INTEGER NOT NULL REFERENCES locations(location_id),
    consultation_fee_cents  INTEGER NOT NULL CHECK (consultation_fee_cents > 0),
    accepts_new_patients    INTEGER NOT NULL CHECK (accepts_new_patients IN (0, 1)),
    is_active               INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);
CREATE INDEX ix_doctors_specialty_location ON doctors(specialty_id, location_id);

CREATE TABLE pharmacies (
    pharmacy_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    address      TEXT NOT NULL,
    city         TEXT NOT NULL,
    open_24h     INTEGER NOT NULL DEFAULT 0 CHECK (open_24h IN (0, 1)),
    -- the clinic location whose e-prescriptions it receives first (nearest partner)
    near_location_id  INTEGER REFERENCES locations(location_id)
);

CREATE TABLE patients (
    patient_id             INTEGER PRIMARY KEY,
    name                   TEXT NOT NULL,
    email                  TEXT NOT NULL UNIQUE,
    phone                  TEXT NOT NULL,
    date_of_birth          TEXT NOT NULL,
    preferred_pharmacy_id  INTEGER REFERENCES pharmacies(pharmacy_id),
    created_at             TEXT NOT NULL
);

CREATE TABLE insurance_plans (
    plan_id           INTEGER PRIMARY KEY,
    provider          TEXT NOT NULL,
    plan_name         TEXT NOT NULL,
    copay_cents       INTEGER NOT NULL CHECK (copay_cents >= 0),
    coverage_percent  INTEGER NOT NULL CHECK (coverage_percent BETWEEN 0 AND 100)
);

CREATE TABLE insurance_policies (
    policy_id      INTEGER PRIMARY KEY,
    patient_id     INTEGER NOT NULL REFERENCES patients(patient_id),
    plan_id        INTEGER NOT NULL REFERENCES insurance_plans(plan_id),
    member_number  TEXT NOT NULL,
    valid_from     TEXT NOT NULL,
    valid_until    TEXT NOT NULL,
    is_primary     INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
    UNIQUE (plan_id, member_number)
);
CREATE INDEX ix_policies_patient ON insurance_policies(patient_id);

CREATE TABLE slots (
    slot_id    INTEGER PRIMARY KEY,
    doctor_id  INTEGER NOT NULL REFERENCES doctors(doctor_id),
    starts_at  TEXT NOT NULL,
    ends_at    TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('open', 'booked', 'blocked')),
    UNIQUE (doctor_id, starts_at)
);
CREATE INDEX ix_slots_status_start ON slots(status, starts_at);

CREATE TABLE appointments (
    appointment_id  INTEGER PRIMARY KEY,
    patient_id      INTEGER NOT NULL REFERENCES patients(patient_id),
    doctor_id       INTEGER NOT NULL REFERENCES doctors(doctor_id),
    slot_id         INTEGER NOT NULL REFERENCES slots(slot_id),
    reason          TEXT NOT NULL,
    policy_id       INTEGER REFERENCES insurance_policies(policy_id),
    status          TEXT NOT NULL CHECK (status IN ('scheduled', 'completed', 'cancelled', 'no_show')),
    created_at      TEXT NOT NULL,
    cancelled_at    TEXT,
    cancel_reason   TEXT
);
CREATE INDEX ix_appointments_patient ON appointments(patient_id, status);
CREATE INDEX ix_appointments_slot ON appointments(slot_id);

CREATE TABLE prescriptions (
    prescription_id    INTEGER PRIMARY KEY,
    patient_id         INTEGER NOT NULL REFERENCES patients(patient_id),
    doctor_id          INTEGER NOT NULL REFERENCES doctors(doctor_id),
    appointment_id     INTEGER REFERENCES appointments(appointment_id),
    medication         TEXT NOT NULL,
    dosage             TEXT NOT NULL,
    refills_remaining  INTEGER NOT NULL CHECK (refills_remaining >= 0),
    issued_at          TEXT NOT NULL,
    expires_at         TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('active', 'expired', 'cancelled'))
);
CREATE INDEX ix_prescriptions_patient ON prescriptions(patient_id, status);

CREATE TABLE refill_requests (
    refill_id        INTEGER PRIMARY KEY,
    prescription_id  INTEGER NOT NULL REFERENCES prescriptions(prescription_id),
    pharmacy_id      INTEGER NOT NULL REFERENCES pharmacies(pharmacy_id),
    status           TEXT NOT NULL CHECK (status IN ('pending', 'fulfilled', 'denied', 'cancelled')),
    requested_at     TEXT NOT NULL
);
CREATE INDEX ix_refills_prescription ON refill_requests(prescription_id);

CREATE TABLE invoices (
    invoice_id               INTEGER PRIMARY KEY,
    patient_id               INTEGER NOT NULL REFERENCES patients(patient_id),
    appointment_id           INTEGER NOT NULL REFERENCES appointments(appointment_id),
    description              TEXT NOT NULL,
    amount_cents             INTEGER NOT NULL CHECK (amount_cents > 0),
    insurance_covered_cents  INTEGER NOT NULL CHECK (insurance_covered_cents >= 0),
    patient_due_cents        INTEGER NOT NULL CHECK (patient_due_cents >= 0),
    status                   TEXT NOT NULL CHECK (status IN ('open', 'paid', 'void')),
    issued_at                TEXT NOT NULL,
    due_date                 TEXT NOT NULL,
    paid_at                  TEXT,
    payment_method           TEXT CHECK (payment_method IN ('card', 'hsa'))
);
CREATE INDEX ix_invoices_patient ON invoices(patient_id, status);
