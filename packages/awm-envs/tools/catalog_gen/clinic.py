"""Generate catalog/clinic/seed.sql (reference time 2025-09-15T08:00:00Z, a Monday).

Patient 1 (Priya Raman) has a hand-written history the tasks rely on: an
insurance policy that expired at the end of August while three upcoming
visits are still billed to it, a physiotherapy session later today, two open
invoices, and prescriptions in every state (refills left, none left, expired,
a refill already pending). 30 other patients (one also named Priya Raman) book
the rest of the doctors' calendars.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 9, 15, 8, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


SPECIALTIES = [
    "Family Medicine",
    "Cardiology",
    "Dermatology",
    "Pediatrics",
    "Orthopedics",
    "Physiotherapy",
    "Endocrinology",
    "Neurology",
    "Ophthalmology",
    "Psychiatry",
]

LOCATIONS = [
    (1, "Northside Clinic", "12 Maple Avenue", "Springfield", 1),
    (2, "Riverside Medical Center", "400 River Road", "Springfield", 1),
    (3, "Downtown Health Hub", "88 Market Street", "Springfield", 1),
    (4, "Lakeview Clinic", "5 Shore Drive", "Riverton", 1),
]

# (doctor_id, name, specialty_id, location_id, fee_cents, accepts_new, is_active, weekdays)
DOCTORS = [
    (1, "Helen Brooks", 1, 1, 12000, 0, 1, (2, 4)),
    (2, "Samuel Okafor", 2, 2, 22000, 1, 1, (0, 3)),
    (3, "Elena Varga", 3, 1, 18000, 0, 1, (1, 3)),
    (4, "Marco Bianchi", 3, 1, 17000, 1, 1, (2, 4)),
    (5, "Sarah Kim", 3, 2, 17500, 1, 1, (0, 2)),
    (6, "Sarah Kim", 4, 3, 11000, 1, 1, (1, 4)),
    (7, "Lucas Meyer", 5, 2, 20000, 1, 1, (1, 3)),
    (8, "Tomas Lind", 6, 1, 9000, 1, 1, (0, 2)),
    (9, "Yusuf Demir", 9, 3, 15000, 1, 1, (3, 4)),
    (10, "Grace Liu", 1, 1, 12000, 1, 1, (0, 1)),
    (11, "Rafael Costa", 1, 1, 12000, 0, 1, (0, 3)),
    (12, "Amina Bello", 7, 2, 19000, 1, 1, (1, 2)),
    (13, "Jonah Weiss", 8, 3, 24000, 1, 1, (0, 4)),
    (14, "Ingrid Holm", 10, 3, 21000, 1, 1, (2, 3)),
    (15, "Peter Nakamura", 2, 1, 22000, 0, 1, (1, 4)),
    (16, "Olivia Grant", 1, 2, 12000, 1, 1, (0, 2)),
    (17, "Daniel Ferreira", 5, 4, 19000, 1, 1, (1, 3)),
    (18, "Mei Ling Chow", 4, 4, 11000, 1, 1, (0, 4)),
    (19, "Victor Hale", 1, 3, 12000, 0, 0, ()),
    (20, "Nora Eriksen", 6, 2, 9000, 1, 1, (1, 4)),
    (21, "Ahmed Saleh", 7, 4, 19000, 1, 1, (2, 4)),
    (22, "Lucia Moreno", 3, 4, 17000, 1, 1, (0, 3)),
]

HOURS = (9, 10, 11, 14, 15)

PATIENTS = [
    "Priya Raman",
    "Jorge Alvarez",
    "Hannah Schultz",
    "Priya Raman",
    "Kwame Mensah",
    "Lena Fischer",
    "Omar Haddad",
    "Chloe Martin",
    "Ivan Petrov",
    "Fatima Noor",
    "Ben Carter",
    "Yuki Sato",
    "Grace O'Neill",
    "Mateo Rossi",
    "Aisha Khan",
    "Liam Walsh",
    "Sofia Lindgren",
    "Ethan Brooks",
    "Zara Ahmed",
    "Noah Kim",
    "Elif Yilmaz",
    "Lucas Dubois",
    "Maya Patel",
    "Oscar Nilsson",
    "Ruth Adeyemi",
    "Samir Gupta",
    "Tessa Moore",
    "Victor Lang",
    "Wendy Zhou",
    "Xavier Diaz",
    "Yara Haddad",
]

PLANS = [
    (1, "Aetherna Health", "Silver 2000", 2500, 80),
    (2, "BlueRiver Mutual", "PPO Gold", 1500, 90),
    (3, "Medline", "Basic Care", 4000, 60),
    (4, "CareBridge", "HMO Standard", 2000, 75),
]

PHARMACIES = [
    (1, "Greenleaf Pharmacy", "221 Main Street", "Springfield", 0, 1),
    (2, "Elm Street Pharmacy", "14 Elm Street", "Springfield", 0, 2),
    (3, "CityCare Pharmacy", "3 Station Square", "Springfield", 1, 3),
    (4, "Elm Street Pharmacy", "90 Elm Street", "Riverton", 0, 4),
    (5, "Harbor Drugs", "7 Pier Lane", "Riverton", 1, None),
]

MEDS = [
    ("Metformin 500 mg", "1 tablet twice daily with meals"),
    ("Cetirizine 10 mg", "1 tablet daily"),
    ("Omeprazole 20 mg", "1 capsule before breakfast"),
    ("Sertraline 50 mg", "1 tablet daily"),
    ("Levothyroxine 50 mcg", "1 tablet every morning"),
    ("Amlodipine 5 mg", "1 tablet daily"),
    ("Salbutamol inhaler", "2 puffs as needed"),
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250915)
    w = SeedWriter(
        "Clinic appointments seed data. Reference time 2025-09-15T08:00:00Z; the logged-in patient is 1."
    )
    w.add("specialties", ("specialty_id", "name"), list(enumerate(SPECIALTIES, start=1)))
    w.add("locations", ("location_id", "name", "address", "city", "is_open"), LOCATIONS)
    w.add(
        "doctors",
        (
            "doctor_id",
            "name",
            "specialty_id",
            "location_id",
            "consultation_fee_cents",
            "accepts_new_patients",
            "is_active",
        ),
        [d[:7] for d in DOCTORS],
    )
    w.add(
        "pharmacies",
        ("pharmacy_id", "name", "address", "city", "open_24h", "near_location_id"),
        PHARMACIES,
    )

    patients = []
    for i, name in enumerate(PATIENTS, start=1):
        local = name.lower().replace(" ", ".").replace("'", "") + ("" if i != 4 else ".r")
        born = datetime(1950, 1, 1) + timedelta(days=rng.randint(0, 20000))
        patients.append(
            (
                i,
                name,
                f"{local}@example.org",
                f"+1-555-02{i:02d}",
                "1988-04-12" if i == 1 else born.strftime("%Y-%m-%d"),
                1 if i == 1 else rng.choice([1, 2, 3, 5]),
                ts(REF - timedelta(days=2400 - i * 37)),
            )
        )
    w.add(
        "patients",
        (
            "patient_id",
            "name",
            "email",
            "phone",
            "date_of_birth",
            "preferred_pharmacy_id",
            "created_at",
        ),
        patients,
    )
    w.add(
        "insurance_plans",
        ("plan_id", "provider", "plan_name", "copay_cents", "coverage_percent"),
        PLANS,
    )
    policies = [
        (1, 1, 1, "AET-558201", "2024-01-01", "2025-08-31", 1),
        (2, 1, 2, "BRM-0093317", "2025-09-01", "2026-08-31", 0),
    ]
    for pid in range(2, len(PATIENTS) + 1):
        plan = rng.choice([1, 2, 3, 4])
        policies.append(
            (
                len(policies) + 1,
                pid,
                plan,
                f"{['AET', 'BRM', 'MDL', 'CBR'][plan - 1]}-{rng.randint(100000, 999999)}",
                "2025-01-01",
                "2025-12-31",
                1,
            )
        )
    policy_of = {p[1]: p[0] for p in policies if p[6] == 1}
    w.add(
        "insurance_policies",
        (
            "policy_id",
            "patient_id",
            "plan_id",
            "member_number",
            "valid_from",
            "valid_until",
            "is_primary",
        ),
        policies,
    )

    # ---------------------------------------------------------------- slots
    slots: list[list] = []  # [slot_id, doctor_id, starts_at(dt), status]
    index: dict[tuple[int, datetime], int] = {}

    def add_slot(doctor: int, start: datetime, status: str) -> int:
        slots.append([len(slots) + 1, doctor, start, status])
        index[(doctor, start)] = len(slots)
        return len(slots)

    # past slots for Priya's history
    history = [
        # (doctor, start, status, reason, policy, appt_status)
        (1, datetime(2025, 6, 10, 9, 0), "Sore throat and rash", 1, "completed"),
        (8, datetime(2025, 5, 2, 14, 0), "Lower back pain", 1, "no_show"),
        (1, datetime(2025, 7, 16, 10, 0), "Blood test review", 1, "cancelled"),
        (2, datetime(2025, 8, 5, 10, 0), "Chest tightness when running", 1, "completed"),
        (7, datetime(2025, 8, 20, 11, 0), "Knee pain after hiking", 1, "completed"),
    ]
    past_ids = []
    for doctor, start, *_ in history:
        past_ids.append(add_slot(doctor, start, "booked"))

    forced = {
        # Priya's upcoming visits
        (8, datetime(2025, 9, 15, 15, 0)): "booked",
        (2, datetime(2025, 9, 18, 10, 0)): "booked",
        (1, datetime(2025, 9, 24, 14, 0)): "booked",
        (9, datetime(2025, 10, 2, 11, 0)): "booked",
        # dermatology at Northside: the earliest open slot is with a doctor who takes no new patients
        (3, datetime(2025, 9, 16, 9, 0)): "open",
        (4, datetime(2025, 9, 17, 9, 0)): "booked",
        (4, datetime(2025, 9, 17, 10, 0)): "open",
        # Dr. Okafor on 22 September: 14:00 taken, 15:00 free
        (2, datetime(2025, 9, 22, 11, 0)): "open",
        (2, datetime(2025, 9, 22, 14, 0)): "booked",
        (2, datetime(2025, 9, 22, 15, 0)): "open",
        # family medicine at Northside, week of 29 September
        (11, datetime(2025, 9, 29, 9, 0)): "open",
        (10, datetime(2025, 9, 29, 9, 0)): "booked",
        (10, datetime(2025, 9, 29, 10, 0)): "booked",
        (10, datetime(2025, 9, 29, 11, 0)): "booked",
        (10, datetime(2025, 9, 29, 14, 0)): "open",
        (10, datetime(2025, 9, 29, 15, 0)): "booked",
        (10, datetime(2025, 9, 30, 9, 0)): "open",
    }
    monday = datetime(2025, 9, 15)
    for week in range(4):
        for doctor, *_rest, days in DOCTORS:
            for wd in days:
                day = monday + timedelta(days=week * 7 + wd)
                for hour in HOURS:
                    start = day.replace(hour=hour)
                    status = forced.get((doctor, start))
                    if status is None:
                        r = rng.random()
                        status = "booked" if r < 0.45 else "blocked" if r < 0.5 else "open"
                        if doctor == 4 and start < datetime(2025, 9, 17, 10):
                            status = "booked"
                    add_slot(doctor, start, status)

    # ---------------------------------------------------------------- appointments
    appts: list[tuple] = []

    def add_appt(patient, slot_id, reason, policy, status, created, cancelled=None, why=None):
        s = slots[slot_id - 1]
        appts.append(
            (
                len(appts) + 1,
                patient,
                s[1],
                slot_id,
                reason,
                policy,
                status,
                ts(created),
                ts(cancelled) if cancelled else None,
                why,
            )
        )
        return len(appts)

    hist_appts = []
    for (_doctor, start, reason, policy, status), sid in zip(history, past_ids, strict=True):
        if status == "cancelled":
            slots[sid - 1][3] = "open"
        hist_appts.append(
            add_appt(
                1,
                sid,
                reason,
                policy,
                status,
                start - timedelta(days=12),
                start - timedelta(days=3) if status == "cancelled" else None,
                "Feeling better" if status == "cancelled" else None,
            )
        )
    upcoming = [
        (8, datetime(2025, 9, 15, 15, 0), "Physiotherapy session: lower back", 1, 24),
        (2, datetime(2025, 9, 18, 10, 0), "Cardiology follow-up", 1, 40),
        (1, datetime(2025, 9, 24, 14, 0), "Annual checkup", 1, 70),
        (9, datetime(2025, 10, 2, 11, 0), "Eye exam", None, 20),
    ]
    for doctor, start, reason, policy, booked_days_ago in upcoming:
        add_appt(
            1,
            index[(doctor, start)],
            reason,
            policy,
            "scheduled",
            REF - timedelta(days=booked_days_ago),
        )
    reasons = [
        "Routine visit",
        "Follow-up",
        "Persistent cough",
        "Skin check",
        "Headaches",
        "Joint pain",
        "Medication review",
        "Vaccination",
    ]
    for s in slots:
        if s[3] == "booked" and not any(a[3] == s[0] for a in appts):
            pid = rng.randint(2, len(PATIENTS))
            add_appt(
                pid,
                s[0],
                rng.choice(reasons),
                policy_of[pid] if rng.random() < 0.8 else None,
                "scheduled",
                REF - timedelta(days=rng.randint(1, 30)),
            )
    # past visits of other patients (completed), with invoices and prescriptions below
    other_past = []
    for pid in range(2, len(PATIENTS) + 1, 2):
        doctor = rng.choice([d for d in DOCTORS if d[6]])
        start = REF - timedelta(days=rng.randint(10, 90))
        start = start.replace(hour=rng.choice(HOURS), minute=0, second=0)
        sid = add_slot(doctor[0], start, "booked")
        other_past.append(
            add_appt(
                pid,
                sid,
                rng.choice(reasons),
                policy_of[pid],
                "completed",
                start - timedelta(days=9),
            )
        )
    w.add(
        "slots",
        ("slot_id", "doctor_id", "starts_at", "ends_at", "status"),
        [(s[0], s[1], ts(s[2]), ts(s[2] + timedelta(minutes=45)), s[3]) for s in slots],
    )
    w.add(
        "appointments",
        (
            "appointment_id",
            "patient_id",
            "doctor_id",
            "slot_id",
            "reason",
            "policy_id",
            "status",
            "created_at",
            "cancelled_at",
            "cancel_reason",
        ),
        appts,
    )

    # ---------------------------------------------------------------- prescriptions
    rx = [
        (
            1,
            1,
            2,
            hist_appts[3],
            "Lisinopril 10 mg",
            "1 tablet daily",
            3,
            "2025-08-05",
            "2026-08-05",
            "active",
        ),
        (
            2,
            1,
            1,
            None,
            "Lisinopril 5 mg",
            "1 tablet daily",
            2,
            "2024-06-01",
            "2025-06-01",
            "expired",
        ),
        (
            3,
            1,
            2,
            hist_appts[3],
            "Atorvastatin 20 mg",
            "1 tablet at night",
            0,
            "2025-08-05",
            "2026-02-05",
            "active",
        ),
        (
            4,
            1,
            1,
            hist_appts[0],
            "Hydrocortisone cream 1%",
            "Apply thinly twice daily",
            1,
            "2025-06-10",
            "2026-06-10",
            "active",
        ),
        (
            5,
            1,
            1,
            hist_appts[0],
            "Amoxicillin 500 mg",
            "1 capsule three times daily for 7 days",
            0,
            "2025-06-10",
            "2025-07-10",
            "expired",
        ),
        (
            6,
            1,
            7,
            hist_appts[4],
            "Ibuprofen 600 mg",
            "1 tablet up to three times daily with food",
            2,
            "2025-08-20",
            "2026-02-20",
            "active",
        ),
    ]
    for aid in other_past:
        a = appts[aid - 1]
        med, dose = rng.choice(MEDS)
        issued = a[7][:10]
        rx.append(
            (
                len(rx) + 1,
                a[1],
                a[2],
                aid,
                med,
                dose,
                rng.randint(0, 3),
                issued,
                "2026-06-30",
                "active",
            )
        )
    w.add(
        "prescriptions",
        (
            "prescription_id",
            "patient_id",
            "doctor_id",
            "appointment_id",
            "medication",
            "dosage",
            "refills_remaining",
            "issued_at",
            "expires_at",
            "status",
        ),
        rx,
    )
    refills = [
        (1, 1, 1, "fulfilled", "2025-08-28T17:00:00Z"),
        (2, 6, 1, "pending", "2025-09-12T19:20:00Z"),
        (3, 5, 3, "fulfilled", "2025-06-20T09:00:00Z"),
    ]
    for r in rx[6:]:
        if r[6] > 0 and rng.random() < 0.5:
            refills.append(
                (
                    len(refills) + 1,
                    r[0],
                    rng.choice([1, 2, 3, 5]),
                    rng.choice(["pending", "fulfilled"]),
                    ts(REF - timedelta(days=rng.randint(1, 20))),
                )
            )
    w.add(
        "refill_requests",
        ("refill_id", "prescription_id", "pharmacy_id", "status", "requested_at"),
        refills,
    )

    # ---------------------------------------------------------------- invoices
    invoices = [
        (
            1,
            1,
            hist_appts[0],
            "Consultation, Dr. Helen Brooks",
            12000,
            8000,
            4000,
            "void",
            "2025-06-11",
            "2025-07-11",
            None,
            None,
        ),
        (
            2,
            1,
            hist_appts[0],
            "Consultation, Dr. Helen Brooks (corrected)",
            12000,
            9500,
            2500,
            "paid",
            "2025-06-12",
            "2025-07-12",
            "2025-06-20T18:00:00Z",
            "card",
        ),
        (
            3,
            1,
            hist_appts[1],
            "Missed appointment fee, Tomas Lind",
            2500,
            0,
            2500,
            "paid",
            "2025-05-03",
            "2025-06-02",
            "2025-05-10T12:00:00Z",
            "card",
        ),
        (
            4,
            1,
            hist_appts[3],
            "Cardiology consultation and ECG, Dr. Samuel Okafor",
            23000,
            18400,
            4600,
            "open",
            "2025-08-21",
            "2025-09-20",
            None,
            None,
        ),
        (
            5,
            1,
            hist_appts[4],
            "Orthopedic consultation, Dr. Lucas Meyer",
            20000,
            16150,
            3850,
            "open",
            "2025-09-05",
            "2025-10-05",
            None,
            None,
        ),
    ]
    for aid in other_past:
        a = appts[aid - 1]
        fee = next(d[4] for d in DOCTORS if d[0] == a[2])
        covered = fee * rng.choice([60, 75, 80, 90]) // 100
        status = rng.choice(["open", "paid", "paid"])
        issued = ts(slots[a[3] - 1][2] + timedelta(days=1))[:10]
        invoices.append(
            (
                len(invoices) + 1,
                a[1],
                aid,
                "Consultation",
                fee,
                covered,
                fee - covered,
                status,
                issued,
                "2025-10-15",
                ts(REF - timedelta(days=2)) if status == "paid" else None,
                "card" if status == "paid" else None,
            )
        )
    w.add(
        "invoices",
        (
            "invoice_id",
            "patient_id",
            "appointment_id",
            "description",
            "amount_cents",
            "insurance_covered_cents",
            "patient_due_cents",
            "status",
            "issued_at",
            "due_date",
            "paid_at",
            "payment_method",
        ),
        invoices,
    )
    return w


def main() -> None:
    w = build()
    path = w.write("clinic")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
