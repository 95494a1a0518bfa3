CREATE TABLE users (
  user_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE,
  phone TEXT
);
CREATE TABLE doctors (
  doctor_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  specialty TEXT NOT NULL
);
CREATE TABLE slots (
  slot_id INTEGER PRIMARY KEY,
  doctor_id INTEGER NOT NULL REFERENCES doctors(doctor_id),
  starts_at TEXT NOT NULL,
  is_booked INTEGER NOT NULL DEFAULT 0 CHECK (is_booked IN (0, 1)),
  UNIQUE (doctor_id, starts_at)
);
CREATE TABLE appointments (
  appointment_id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(user_id),
  slot_id INTEGER NOT NULL REFERENCES slots(slot_id),
  reason TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('booked', 'cancelled', 'completed')),
  created_at TEXT NOT NULL
);
CREATE TABLE invoices (
  invoice_id INTEGER PRIMARY KEY,
  appointment_id INTEGER NOT NULL REFERENCES appointments(appointment_id),
  user_id INTEGER NOT NULL REFERENCES users(user_id),
  amount REAL NOT NULL CHECK (amount >= 0),
  status TEXT NOT NULL CHECK (status IN ('unpaid', 'paid')),
  issued_at TEXT NOT NULL,
  paid_at TEXT
);
CREATE INDEX idx_slots_doctor ON slots(doctor_id, starts_at);
CREATE INDEX idx_appointments_user ON appointments(user_id);
