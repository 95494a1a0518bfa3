"""Clinic appointments: find doctors and open slots, book, reschedule and cancel visits,
manage insurance, request prescription refills and pay invoices. The logged-in
patient is patient 1 (Priya Raman).

Money is integer cents (USD). Times are ISO-8601 UTC. "Now" is REFERENCE_TIME.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-09-15T08:00:00Z"
CURRENT_PATIENT_ID = 1
CANCEL_NOTICE_HOURS = 24
MAX_PAGE = 50


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class Specialty(Base):
    __tablename__ = "specialties"
    specialty_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]


class Location(Base):
    __tablename__ = "locations"
    location_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    address: Mapped[str]
    city: Mapped[str]
    is_open: Mapped[int]


class Doctor(Base):
    __tablename__ = "doctors"
    doctor_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    specialty_id: Mapped[int] = mapped_column(ForeignKey("specialties.specialty_id"))
    location_id: Mapped[int] = mapped_column(ForeignKey("locations.location_id"))
    consultation_fee_cents: Mapped[int]
    accepts_new_patients: Mapped[int]
    is_active: Mapped[int]


class Pharmacy(Base):
    __tablename__ = "pharmacies"
    pharmacy_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    address: Mapped[str]
    city: Mapped[str]
    open_24h: Mapped[int]
    near_location_id: Mapped[int | None] = mapped_column(ForeignKey("locations.location_id"))


class Patient(Base):
    __tablename__ = "patients"
    patient_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]
    date_of_birth: Mapped[str]
    preferred_pharmacy_id: Mapped[int | None] = mapped_column(ForeignKey("pharmacies.pharmacy_id"))
    created_at: Mapped[str]


class InsurancePlan(Base):
    __tablename__ = "insurance_plans"
    plan_id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str]
    plan_name: Mapped[str]
    copay_cents: Mapped[int]
    coverage_percent: Mapped[int]


class InsurancePolicy(Base):
    __tablename__ = "insurance_policies"
    policy_id: Mapped[int] = mapped_column(primary_key=True)
    patient_id: Mapped[int] = mapped_column(ForeignKey("patients.patient_id"))
    plan_id: Mapped[int] = mapped_column(ForeignKey("insurance_plans.plan_id"))
    member_number: Mapped[str]
    valid_from: Mapped[str]
    valid_until: Mapped[str]
    is_primary: Mapped[int]


class Slot(Base):
    __tablename__ = "slots"
    slot_id: Mapped[int] = mapped_column(primary_key=True)
    doctor_id: Mapped[int] = mapped_column(ForeignKey("doctors.doctor_id"))
    starts_at: Mapped[str]
    ends_at: Mapped[str]
    status: Mapped[str]


class Appointment(Base):
    __tablename__ = "appointments"
    appointment_id: Mapped[int] = mapped_column(primary_key=True)
    patient_id: Mapped[int] = mapped_column(ForeignKey("patients.patient_id"))
    doctor_id: Mapped[int] = mapped_column(ForeignKey("doctors.doctor_id"))
    slot_id: Mapped[int] = mapped_column(ForeignKey("slots.slot_id"))
    reason: Mapped[str]
    policy_id: Mapped[int | None] = mapped_column(ForeignKey("insurance_policies.policy_id"))
    status: Mapped[str]
    created_at: Mapped[str]
    cancelled_at: Mapped[str | None]
    cancel_reason: Mapped[str | None]


class Prescription(Base):
    __tablename__ = "prescriptions"
    prescription_id: Mapped[int] = mapped_column(primary_key=True)
    patient_id: Mapped[int] = mapped_column(ForeignKey("patients.patient_id"))
    doctor_id: Mapped[int] = mapped_column(ForeignKey("doctors.doctor_id"))
    appointment_id: Mapped[int | None] = mapped_column(ForeignKey("appointments.appointment_id"))
    medication: Mapped[str]
    dosage: Mapped[str]
    refills_remaining: Mapped[int]
    issued_at: Mapped[str]
    expires_at: Mapped[str]
    status: Mapped[str]


class RefillRequest(Base):
    __tablename__ = "refill_requests"
    refill_id: Mapped[int] = mapped_column(primary_key=True)
    prescription_id: Mapped[int] = mapped_column(ForeignKey("prescriptions.prescription_id"))
    pharmacy_id: Mapped[int] = mapped_column(ForeignKey("pharmacies.pharmacy_id"))
    status: Mapped[str]
    requested_at: Mapped[str]


class Invoice(Base):
    __tablename__ = "invoices"
    invoice_id: Mapped[int] = mapped_column(primary_key=True)
    patient_id: Mapped[int] = mapped_column(ForeignKey("patients.patient_id"))
    appointment_id: Mapped[int] = mapped_column(ForeignKey("appointments.appointment_id"))
    description: Mapped[str]
    amount_cents: Mapped[int]
    insurance_covered_cents: Mapped[int]
    patient_due_cents: Mapped[int]
    status: Mapped[str]
    issued_at: Mapped[str]
    due_date: Mapped[str]
    paid_at: Mapped[str | None]
    payment_method: Mapped[str | None]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('CLINIC_DB', 'clinic.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Clinic",
    description="Patient portal of a multi-location clinic for the logged-in patient (patient 1). "
    "Amounts are integer cents (USD); times are UTC.",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"
    cancellation_notice_hours: int = CANCEL_NOTICE_HOURS


class ProfileOut(BaseModel):
    patient_id: int
    name: str
    email: str
    phone: str
    date_of_birth: str
    preferred_pharmacy_id: int | None
    preferred_pharmacy_name: str | None
    patient_since: str


class SpecialtyOut(BaseModel):
    specialty_id: int
    name: str


class SpecialtyList(BaseModel):
    items: list[SpecialtyOut]
    total: int


class LocationOut(BaseModel):
    location_id: int
    name: str
    address: str
    city: str
    is_open: bool


class LocationList(BaseModel):
    items: list[LocationOut]
    total: int


class DoctorOut(BaseModel):
    doctor_id: int
    name: str
    specialty_id: int
    specialty: str
    location_id: int
    location_name: str
    consultation_fee_cents: int
    accepts_new_patients: bool
    is_active: bool
    you_are_an_existing_patient: bool
    can_book: bool


class DoctorPage(BaseModel):
    items: list[DoctorOut]
    total: int
    next_cursor: str | None


class SlotOut(BaseModel):
    slot_id: int
    doctor_id: int
    doctor_name: str
    specialty: str
    location_id: int
    location_name: str
    starts_at: str
    ends_at: str
    doctor_accepts_new_patients: bool


class SlotPage(BaseModel):
    items: list[SlotOut]
    total: int
    next_cursor: str | None


class DoctorDetailOut(DoctorOut):
    next_open_slots: list[SlotOut]


class BookIn(BaseModel):
    slot_id: int
    reason: str = Field(min_length=2, max_length=200, description="Why you are coming in")
    policy_id: int | None = Field(
        default=None,
        description="Insurance policy to bill (must be valid on the visit date); omit to self-pay.",
    )


class RescheduleIn(BaseModel):
    new_slot_id: int = Field(description="An open slot with the same doctor")


class AppointmentInsuranceIn(BaseModel):
    policy_id: int


class AppointmentOut(BaseModel):
    appointment_id: int
    doctor_id: int
    doctor_name: str
    specialty: str
    location_name: str
    slot_id: int
    starts_at: str
    ends_at: str
    reason: str
    status: str
    policy_id: int | None
    insurance: str | None
    created_at: str
    cancelled_at: str | None
    cancel_reason: str | None
    can_cancel_online: bool


class AppointmentPage(BaseModel):
    items: list[AppointmentOut]
    total: int
    next_cursor: str | None


class RefillOut(BaseModel):
    refill_id: int
    prescription_id: int
    medication: str
    pharmacy_id: int
    pharmacy_name: str
    status: str
    requested_at: str


class RefillList(BaseModel):
    items: list[RefillOut]
    total: int


class PrescriptionOut(BaseModel):
    prescription_id: int
    medication: str
    dosage: str
    doctor_id: int
    doctor_name: str
    refills_remaining: int
    issued_at: str
    expires_at: str
    status: str
    has_pending_refill: bool


class PrescriptionDetailOut(PrescriptionOut):
    refills: list[RefillOut]


class PrescriptionList(BaseModel):
    items: list[PrescriptionOut]
    total: int


class RefillIn(BaseModel):
    pharmacy_id: int


class PharmacyOut(BaseModel):
    pharmacy_id: int
    name: str
    address: str
    city: str
    open_24h: bool
    near_location_id: int | None


class PharmacyList(BaseModel):
    items: list[PharmacyOut]
    total: int


class PreferredPharmacyIn(BaseModel):
    pharmacy_id: int


class PlanOut(BaseModel):
    plan_id: int
    provider: str
    plan_name: str
    copay_cents: int
    coverage_percent: int


class PlanList(BaseModel):
    items: list[PlanOut]
    total: int


class PolicyOut(BaseModel):
    policy_id: int
    plan_id: int
    provider: str
    plan_name: str
    member_number: str
    valid_from: str
    valid_until: str
    is_primary: bool
    valid_now: bool


class PolicyList(BaseModel):
    items: list[PolicyOut]
    total: int


class InvoiceOut(BaseModel):
    invoice_id: int
    appointment_id: int
    description: str
    amount_cents: int
    insurance_covered_cents: int
    patient_due_cents: int
    status: str
    issued_at: str
    due_date: str
    paid_at: str | None
    payment_method: str | None


class InvoicePage(BaseModel):
    items: list[InvoiceOut]
    total: int
    next_cursor: str | None
    open_balance_cents: int


# --------------------------------------------------------------------------- helpers


def _parse_cursor(cursor: str | None) -> int:
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit():
        raise HTTPException(
            400, f"Invalid cursor {cursor!r}: pass the next_cursor value from the previous page."
        )
    return int(cursor)


def _next_cursor(offset: int, limit: int, total: int) -> str | None:
    return str(offset + limit) if offset + limit < total else None


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: str | None, name: str) -> str | None:
    """Normalise an ISO date or datetime argument to the stored format."""
    if value is None or value == "":
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            dt = datetime.fromisoformat(text + "T00:00:00+00:00")
        else:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=_ts(REFERENCE_TIME).tzinfo)
    except ValueError as exc:
        raise HTTPException(
            400, f"{name}={value!r} is not an ISO-8601 date or time, e.g. 2025-09-22T12:00:00Z."
        ) from exc
    return _iso(dt)


def _today() -> str:
    return REFERENCE_TIME[:10]


def _policy_label(db: Session, policy_id: int | None) -> str | None:
    if policy_id is None:
        return None
    policy = db.get(InsurancePolicy, policy_id)
    plan = db.get(InsurancePlan, policy.plan_id) if policy else None
    return f"{plan.provider} {plan.plan_name} ({policy.member_number})" if plan else None


def _is_existing_patient(db: Session, doctor_id: int) -> bool:
    seen = db.scalar(
        select(func.count())
        .select_from(Appointment)
        .where(
            Appointment.patient_id == CURRENT_PATIENT_ID,
            Appointment.doctor_id == doctor_id,
            Appointment.status == "completed",
        )
    )
    return bool(seen)


def _doctor_out(db: Session, d: Doctor) -> DoctorOut:
    existing = _is_existing_patient(db, d.doctor_id)
    location = db.get(Location, d.location_id)
    return DoctorOut(
        doctor_id=d.doctor_id,
        name=d.name,
        specialty_id=d.specialty_id,
        specialty=db.get(Specialty, d.specialty_id).name,
        location_id=d.location_id,
        location_name=location.name,
        consultation_fee_cents=d.consultation_fee_cents,
        accepts_new_patients=bool(d.accepts_new_patients),
        is_active=bool(d.is_active),
        you_are_an_existing_patient=existing,
        can_book=bool(d.is_active and location.is_open and (d.accepts_new_patients or existing)),
    )


def _slot_out(db: Session, s: Slot) -> SlotOut:
    d = db.get(Doctor, s.doctor_id)
    return SlotOut(
        slot_id=s.slot_id,
        doctor_id=d.doctor_id,
        doctor_name=d.name,
        specialty=db.get(Specialty, d.specialty_id).name,
        location_id=d.location_id,
        location_name=db.get(Location, d.location_id).name,
        starts_at=s.starts_at,
        ends_at=s.ends_at,
        doctor_accepts_new_patients=bool(d.accepts_new_patients),
    )


def _can_cancel(a: Appointment, slot: Slot) -> bool:
    return a.status == "scheduled" and _ts(slot.starts_at) - _ts(REFERENCE_TIME) >= timedelta(
        hours=CANCEL_NOTICE_HOURS
    )


def _appointment_out(db: Session, a: Appointment) -> AppointmentOut:
    d = db.get(Doctor, a.doctor_id)
    slot = db.get(Slot, a.slot_id)
    return AppointmentOut(
        appointment_id=a.appointment_id,
        doctor_id=d.doctor_id,
        doctor_name=d.name,
        specialty=db.get(Specialty, d.specialty_id).name,
        location_name=db.get(Location, d.location_id).name,
        slot_id=slot.slot_id,
        starts_at=slot.starts_at,
        ends_at=slot.ends_at,
        reason=a.reason,
        status=a.status,
        policy_id=a.policy_id,
        insurance=_policy_label(db, a.policy_id),
        created_at=a.created_at,
        cancelled_at=a.cancelled_at,
        cancel_reason=a.cancel_reason,
        can_cancel_online=_can_cancel(a, slot),
    )


def _my_appointment(db: Session, appointment_id: int) -> Appointment:
    a = db.get(Appointment, appointment_id)
    if a is None or a.patient_id != CURRENT_PATIENT_ID:
        raise HTTPException(
            404,
            f"Appointment {appointment_id} is not among your appointments; "
            "use list_my_appointments to see them.",
        )
    return a


def _my_policies(db: Session) -> list[InsurancePolicy]:
    return list(
        db.scalars(
            select(InsurancePolicy)
            .where(InsurancePolicy.patient_id == CURRENT_PATIENT_ID)
            .order_by(InsurancePolicy.policy_id)
        )
    )


def _policy_for_visit(db: Session, policy_id: int, starts_at: str) -> InsurancePolicy:
    policy = db.get(InsurancePolicy, policy_id)
    mine = _my_policies(db)
    if policy is None or policy.patient_id != CURRENT_PATIENT_ID:
        raise HTTPException(
            404,
            f"Policy {policy_id} is not one of your insurance policies; your policy ids: "
            f"{[p.policy_id for p in mine]}.",
        )
    day = starts_at[:10]
    if not policy.valid_from <= day <= policy.valid_until:
        valid = [p.policy_id for p in mine if p.valid_from <= day <= p.valid_until]
        raise HTTPException(
            409,
            f"Policy {policy_id} is valid {policy.valid_from} to {policy.valid_until} and does not "
            f"cover a visit on {day}. Policies valid that day: {valid or 'none'}.",
        )
    return policy


def _open_future_slot(db: Session, slot_id: int) -> Slot:
    slot = db.get(Slot, slot_id)
    if slot is None:
        raise HTTPException(404, f"Slot {slot_id} not found; use search_available_slots.")
    if slot.status != "open":
        raise HTTPException(
            409,
            f"Slot {slot_id} ({slot.starts_at}) is {slot.status}, not open; "
            "use search_available_slots to find an open one.",
        )
    if slot.starts_at <= REFERENCE_TIME:
        raise HTTPException(
            409, f"Slot {slot_id} starts at {slot.starts_at}, which is in the past."
        )
    return slot


def _my_prescription(db: Session, prescription_id: int) -> Prescription:
    rx = db.get(Prescription, prescription_id)
    if rx is None or rx.patient_id != CURRENT_PATIENT_ID:
        raise HTTPException(
            404,
            f"Prescription {prescription_id} is not among your prescriptions; "
            "use list_my_prescriptions.",
        )
    return rx


def _pending_refill(db: Session, prescription_id: int) -> RefillRequest | None:
    return db.scalar(
        select(RefillRequest).where(
            RefillRequest.prescription_id == prescription_id, RefillRequest.status == "pending"
        )
    )


def _refill_out(db: Session, r: RefillRequest) -> RefillOut:
    return RefillOut(
        refill_id=r.refill_id,
        prescription_id=r.prescription_id,
        medication=db.get(Prescription, r.prescription_id).medication,
        pharmacy_id=r.pharmacy_id,
        pharmacy_name=db.get(Pharmacy, r.pharmacy_id).name,
        status=r.status,
        requested_at=r.requested_at,
    )


def _prescription_out(db: Session, rx: Prescription) -> PrescriptionOut:
    return PrescriptionOut(
        prescription_id=rx.prescription_id,
        medication=rx.medication,
        dosage=rx.dosage,
        doctor_id=rx.doctor_id,
        doctor_name=db.get(Doctor, rx.doctor_id).name,
        refills_remaining=rx.refills_remaining,
        issued_at=rx.issued_at,
        expires_at=rx.expires_at,
        status=rx.status,
        has_pending_refill=_pending_refill(db, rx.prescription_id) is not None,
    )


def _pharmacy(db: Session, pharmacy_id: int) -> Pharmacy:
    ph = db.get(Pharmacy, pharmacy_id)
    if ph is None:
        raise HTTPException(404, f"Pharmacy {pharmacy_id} not found; use search_pharmacies.")
    return ph


def _pharmacy_out(p: Pharmacy) -> PharmacyOut:
    return PharmacyOut(
        pharmacy_id=p.pharmacy_id,
        name=p.name,
        address=p.address,
        city=p.city,
        open_24h=bool(p.open_24h),
        near_location_id=p.near_location_id,
    )


def _policy_out(db: Session, p: InsurancePolicy) -> PolicyOut:
    plan = db.get(InsurancePlan, p.plan_id)
    return PolicyOut(
        policy_id=p.policy_id,
        plan_id=plan.plan_id,
        provider=plan.provider,
        plan_name=plan.plan_name,
        member_number=p.member_number,
        valid_from=p.valid_from,
        valid_until=p.valid_until,
        is_primary=bool(p.is_primary),
        valid_now=p.valid_from <= _today() <= p.valid_until,
    )


def _invoice_out(i: Invoice) -> InvoiceOut:
    return InvoiceOut(
        invoice_id=i.invoice_id,
        appointment_id=i.appointment_id,
        description=i.description,
        amount_cents=i.amount_cents,
        insurance_covered_cents=i.insurance_covered_cents,
        patient_due_cents=i.patient_due_cents,
        status=i.status,
        issued_at=i.issued_at,
        due_date=i.due_date,
        paid_at=i.paid_at,
        payment_method=i.payment_method,
    )


# --------------------------------------------------------------------------- tools: profile


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The clinic's current date and time (UTC). Use it for 'today', 'tomorrow' and the 24-hour cancellation rule."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


def _profile(db: Session) -> ProfileOut:
    p = db.get(Patient, CURRENT_PATIENT_ID)
    if p is None:
        raise HTTPException(500, "The logged-in patient is missing from the database.")
    pharmacy = db.get(Pharmacy, p.preferred_pharmacy_id) if p.preferred_pharmacy_id else None
    return ProfileOut(
        patient_id=p.patient_id,
        name=p.name,
        email=p.email,
        phone=p.phone,
        date_of_birth=p.date_of_birth,
        preferred_pharmacy_id=p.preferred_pharmacy_id,
        preferred_pharmacy_name=f"{pharmacy.name}, {pharmacy.address}, {pharmacy.city}"
        if pharmacy
        else None,
        patient_since=p.created_at,
    )


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """Your patient profile, including your preferred pharmacy."""
    return _profile(db)


@app.patch("/me", operation_id="update_my_contact", response_model=ProfileOut)
def update_my_contact(
    phone: str | None = Query(default=None, min_length=7, max_length=20),
    email: str | None = Query(default=None, min_length=5, max_length=120),
    db: Session = Depends(get_db),
) -> ProfileOut:
    """Change your phone number and/or email address (pass at least one)."""
    if phone is None and email is None:
        raise HTTPException(400, "Pass phone, email or both.")
    p = db.get(Patient, CURRENT_PATIENT_ID)
    if email is not None:
        email = email.strip().lower()
        if "@" not in email:
            raise HTTPException(400, f"{email!r} is not an email address.")
        taken = db.scalar(
            select(Patient).where(
                func.lower(Patient.email) == email, Patient.patient_id != CURRENT_PATIENT_ID
            )
        )
        if taken:
            raise HTTPException(409, f"The email {email} is already used by another patient.")
        p.email = email
    if phone is not None:
        p.phone = phone.strip()
    db.commit()
    return _profile(db)


# --------------------------------------------------------------------------- tools: directory


@app.get("/specialties", operation_id="list_specialties", response_model=SpecialtyList)
def list_specialties(db: Session = Depends(get_db)) -> SpecialtyList:
    """Every medical specialty the clinic offers."""
    items = [
        SpecialtyOut(specialty_id=s.specialty_id, name=s.name)
        for s in db.scalars(select(Specialty).order_by(Specialty.specialty_id))
    ]
    return SpecialtyList(items=items, total=len(items))


@app.get("/locations", operation_id="list_locations", response_model=LocationList)
def list_locations(db: Session = Depends(get_db)) -> LocationList:
    """The clinic's locations."""
    items = [
        LocationOut(
            location_id=loc.location_id,
            name=loc.name,
            address=loc.address,
            city=loc.city,
            is_open=bool(loc.is_open),
        )
        for loc in db.scalars(select(Location).order_by(Location.location_id))
    ]
    return LocationList(items=items, total=len(items))


@app.get("/doctors", operation_id="search_doctors", response_model=DoctorPage)
def search_doctors(
    name: str | None = Query(default=None, description="Part of the doctor's name"),
    specialty_id: int | None = None,
    location_id: int | None = None,
    accepting_new_patients: bool | None = None,
    include_inactive: bool = False,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> DoctorPage:
    """Find doctors by name, specialty and location; paginated, ordered by doctor_id.

    can_book says whether you can book them (active, and accepting new patients
    unless you have already been seen by them).
    """
    offset = _parse_cursor(cursor)
    stmt = select(Doctor)
    if name:
        stmt = stmt.where(func.lower(Doctor.name).contains(name.strip().lower()))
    if specialty_id is not None:
        if db.get(Specialty, specialty_id) is None:
            raise HTTPException(404, f"Specialty {specialty_id} not found; use list_specialties.")
        stmt = stmt.where(Doctor.specialty_id == specialty_id)
    if location_id is not None:
        if db.get(Location, location_id) is None:
            raise HTTPException(404, f"Location {location_id} not found; use list_locations.")
        stmt = stmt.where(Doctor.location_id == location_id)
    if accepting_new_patients is not None:
        stmt = stmt.where(Doctor.accepts_new_patients == int(accepting_new_patients))
    if not include_inactive:
        stmt = stmt.where(Doctor.is_active == 1)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(Doctor.doctor_id).offset(offset).limit(limit))
    return DoctorPage(
        items=[_doctor_out(db, d) for d in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


def _open_slots_stmt():
    return (
        select(Slot)
        .join(Doctor, Doctor.doctor_id == Slot.doctor_id)
        .join(Location, Location.location_id == Doctor.location_id)
        .where(
            Slot.status == "open",
            Slot.starts_at > REFERENCE_TIME,
            Doctor.is_active == 1,
            Location.is_open == 1,
        )
    )


@app.get("/doctors/{doctor_id}", operation_id="get_doctor", response_model=DoctorDetailOut)
def get_doctor(doctor_id: int, db: Session = Depends(get_db)) -> DoctorDetailOut:
    """One doctor with fee, booking eligibility and their next five open slots."""
    d = db.get(Doctor, doctor_id)
    if d is None:
        raise HTTPException(404, f"Doctor {doctor_id} not found; use search_doctors.")
    slots = db.scalars(
        _open_slots_stmt()
        .where(Slot.doctor_id == doctor_id)
        .order_by(Slot.starts_at, Slot.slot_id)
        .limit(5)
    )
    return DoctorDetailOut(
        **_doctor_out(db, d).model_dump(), next_open_slots=[_slot_out(db, s) for s in slots]
    )


@app.get("/slots", operation_id="search_available_slots", response_model=SlotPage)
def search_available_slots(
    doctor_id: int | None = None,
    specialty_id: int | None = None,
    location_id: int | None = None,
    starts_after: str | None = Query(
        default=None, description="ISO date or time; only slots starting at or after it"
    ),
    starts_before: str | None = Query(
        default=None, description="ISO date or time; only slots starting before it"
    ),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> SlotPage:
    """Open future appointment slots, earliest first; filter by doctor, specialty, location and time window."""
    offset = _parse_cursor(cursor)
    stmt = _open_slots_stmt()
    if doctor_id is not None:
        if db.get(Doctor, doctor_id) is None:
            raise HTTPException(404, f"Doctor {doctor_id} not found; use search_doctors.")
        stmt = stmt.where(Slot.doctor_id == doctor_id)
    if specialty_id is not None:
        if db.get(Specialty, specialty_id) is None:
            raise HTTPException(404, f"Specialty {specialty_id} not found; use list_specialties.")
        stmt = stmt.where(Doctor.specialty_id == specialty_id)
    if location_id is not None:
        if db.get(Location, location_id) is None:
            raise HTTPException(404, f"Location {location_id} not found; use list_locations.")
        stmt = stmt.where(Doctor.location_id == location_id)
    after = _parse_time(starts_after, "starts_after")
    before = _parse_time(starts_before, "starts_before")
    if after:
        stmt = stmt.where(Slot.starts_at >= after)
    if before:
        stmt = stmt.where(Slot.starts_at < before)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(Slot.starts_at, Slot.slot_id).offset(offset).limit(limit))
    return SlotPage(
        items=[_slot_out(db, s) for s in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


# --------------------------------------------------------------------------- tools: appointments


@app.get("/appointments", operation_id="list_my_appointments", response_model=AppointmentPage)
def list_my_appointments(
    status: Literal["scheduled", "completed", "cancelled", "no_show"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> AppointmentPage:
    """Your appointments ordered by start time (earliest first), optionally filtered by status; paginated."""
    offset = _parse_cursor(cursor)
    stmt = (
        select(Appointment)
        .join(Slot, Slot.slot_id == Appointment.slot_id)
        .where(Appointment.patient_id == CURRENT_PATIENT_ID)
    )
    if status:
        stmt = stmt.where(Appointment.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Slot.starts_at, Appointment.appointment_id).offset(offset).limit(limit)
    )
    return AppointmentPage(
        items=[_appointment_out(db, a) for a in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get(
    "/appointments/{appointment_id}", operation_id="get_appointment", response_model=AppointmentOut
)
def get_appointment(appointment_id: int, db: Session = Depends(get_db)) -> AppointmentOut:
    """One of your appointments."""
    return _appointment_out(db, _my_appointment(db, appointment_id))


@app.post("/appointments", operation_id="book_appointment", response_model=AppointmentOut)
def book_appointment(body: BookIn, db: Session = Depends(get_db)) -> AppointmentOut:
    """Book an open slot. The doctor must accept new patients unless they have seen you before;
    you can hold one upcoming appointment per doctor and none that overlap."""
    slot = _open_future_slot(db, body.slot_id)
    d = db.get(Doctor, slot.doctor_id)
    if not d.is_active:
        raise HTTPException(409, f"Dr. {d.name} no longer sees patients.")
    if not d.accepts_new_patients and not _is_existing_patient(db, d.doctor_id):
        others = [
            f"{o.doctor_id} ({o.name})"
            for o in db.scalars(
                select(Doctor).where(
                    Doctor.specialty_id == d.specialty_id,
                    Doctor.accepts_new_patients == 1,
                    Doctor.is_active == 1,
                )
            )
        ]
        raise HTTPException(
            403,
            f"Dr. {d.name} (doctor {d.doctor_id}) is not accepting new patients and has not seen "
            f"you before. Doctors of the same specialty who accept new patients: {others}.",
        )
    mine = list(
        db.scalars(
            select(Appointment).where(
                Appointment.patient_id == CURRENT_PATIENT_ID, Appointment.status == "scheduled"
            )
        )
    )
    for a in mine:
        s = db.get(Slot, a.slot_id)
        if a.doctor_id == d.doctor_id:
            raise HTTPException(
                409,
                f"You already have appointment {a.appointment_id} with Dr. {d.name} on "
                f"{s.starts_at}; use reschedule_appointment to move it instead.",
            )
        if s.starts_at < slot.ends_at and slot.starts_at < s.ends_at:
            raise HTTPException(
                409,
                f"Slot {slot.slot_id} ({slot.starts_at}) overlaps your appointment "
                f"{a.appointment_id} at {s.starts_at}.",
            )
    policy_id = None
    if body.policy_id is not None:
        policy_id = _policy_for_visit(db, body.policy_id, slot.starts_at).policy_id
    appt = Appointment(
        patient_id=CURRENT_PATIENT_ID,
        doctor_id=d.doctor_id,
        slot_id=slot.slot_id,
        reason=body.reason.strip(),
        policy_id=policy_id,
        status="scheduled",
        created_at=REFERENCE_TIME,
    )
    slot.status = "booked"
    db.add(appt)
    db.commit()
    return _appointment_out(db, appt)


def _require_changeable(db: Session, a: Appointment, action: str) -> Slot:
    slot = db.get(Slot, a.slot_id)
    if a.status != "scheduled":
        raise HTTPException(
            409,
            f"Appointment {a.appointment_id} is {a.status}; only scheduled ones can be {action}.",
        )
    if not _can_cancel(a, slot):
        raise HTTPException(
            409,
            f"Appointment {a.appointment_id} starts at {slot.starts_at}, less than "
            f"{CANCEL_NOTICE_HOURS} hours from now ({REFERENCE_TIME}); it can no longer be {action} "
            "online. Please phone the clinic.",
        )
    return slot


@app.post(
    "/appointments/{appointment_id}/cancel",
    operation_id="cancel_appointment",
    response_model=AppointmentOut,
)
def cancel_appointment(
    appointment_id: int,
    reason: str = Query(default="Cancelled by patient", max_length=200),
    db: Session = Depends(get_db),
) -> AppointmentOut:
    """Cancel a scheduled appointment at least 24 hours before it starts; the slot reopens."""
    a = _my_appointment(db, appointment_id)
    slot = _require_changeable(db, a, "cancelled")
    a.status = "cancelled"
    a.cancelled_at = REFERENCE_TIME
    a.cancel_reason = reason.strip() or "Cancelled by patient"
    slot.status = "open"
    db.commit()
    return _appointment_out(db, a)


@app.post(
    "/appointments/{appointment_id}/reschedule",
    operation_id="reschedule_appointment",
    response_model=AppointmentOut,
)
def reschedule_appointment(
    appointment_id: int, body: RescheduleIn, db: Session = Depends(get_db)
) -> AppointmentOut:
    """Move a scheduled appointment to another open slot with the same doctor (at least 24 hours'
    notice). The billed policy must also be valid on the new date."""
    a = _my_appointment(db, appointment_id)
    old = _require_changeable(db, a, "rescheduled")
    new = _open_future_slot(db, body.new_slot_id)
    if new.doctor_id != a.doctor_id:
        raise HTTPException(
            409,
            f"Slot {new.slot_id} is with another doctor; an appointment can only move to a slot "
            f"with the same doctor (doctor {a.doctor_id}). To change doctor, cancel and book.",
        )
    if a.policy_id is not None:
        policy = db.get(InsurancePolicy, a.policy_id)
        day = new.starts_at[:10]
        if not policy.valid_from <= day <= policy.valid_until:
            raise HTTPException(
                409,
                f"Appointment {a.appointment_id} is billed to policy {a.policy_id}, valid until "
                f"{policy.valid_until}, which does not cover {day}. Switch it with "
                "set_appointment_insurance first.",
            )
    old.status = "open"
    new.status = "booked"
    a.slot_id = new.slot_id
    db.commit()
    return _appointment_out(db, a)


@app.patch(
    "/appointments/{appointment_id}/insurance",
    operation_id="set_appointment_insurance",
    response_model=AppointmentOut,
)
def set_appointment_insurance(
    appointment_id: int, body: AppointmentInsuranceIn, db: Session = Depends(get_db)
) -> AppointmentOut:
    """Bill a scheduled appointment to one of your policies (valid on the visit date)."""
    a = _my_appointment(db, appointment_id)
    if a.status != "scheduled":
        raise HTTPException(
            409,
            f"Appointment {appointment_id} is {a.status}; only scheduled visits can change insurance.",
        )
    slot = db.get(Slot, a.slot_id)
    policy = _policy_for_visit(db, body.policy_id, slot.starts_at)
    if a.policy_id == policy.policy_id:
        raise HTTPException(
            409, f"Appointment {appointment_id} is already billed to policy {policy.policy_id}."
        )
    a.policy_id = policy.policy_id
    db.commit()
    return _appointment_out(db, a)


# --------------------------------------------------------------------------- tools: prescriptions


@app.get("/prescriptions", operation_id="list_my_prescriptions", response_model=PrescriptionList)
def list_my_prescriptions(
    status: Literal["active", "expired", "cancelled"] | None = None,
    medication: str | None = Query(default=None, description="Part of the medication name"),
    db: Session = Depends(get_db),
) -> PrescriptionList:
    """Your prescriptions, newest first, with refills left and whether a refill is pending."""
    stmt = select(Prescription).where(Prescription.patient_id == CURRENT_PATIENT_ID)
    if status:
        stmt = stmt.where(Prescription.status == status)
    if medication:
        stmt = stmt.where(func.lower(Prescription.medication).contains(medication.strip().lower()))
    rows = db.scalars(
        stmt.order_by(Prescription.issued_at.desc(), Prescription.prescription_id.desc())
    )
    items = [_prescription_out(db, rx) for rx in rows]
    return PrescriptionList(items=items, total=len(items))


@app.get(
    "/prescriptions/{prescription_id}",
    operation_id="get_prescription",
    response_model=PrescriptionDetailOut,
)
def get_prescription(prescription_id: int, db: Session = Depends(get_db)) -> PrescriptionDetailOut:
    """One of your prescriptions with its refill history."""
    rx = _my_prescription(db, prescription_id)
    refills = db.scalars(
        select(RefillRequest)
        .where(RefillRequest.prescription_id == prescription_id)
        .order_by(RefillRequest.refill_id)
    )
    return PrescriptionDetailOut(
        **_prescription_out(db, rx).model_dump(), refills=[_refill_out(db, r) for r in refills]
    )


@app.post(
    "/prescriptions/{prescription_id}/refills",
    operation_id="request_refill",
    response_model=RefillOut,
)
def request_refill(
    prescription_id: int, body: RefillIn, db: Session = Depends(get_db)
) -> RefillOut:
    """Ask for a refill of an active prescription at a pharmacy; uses one of its remaining refills."""
    rx = _my_prescription(db, prescription_id)
    doctor = db.get(Doctor, rx.doctor_id)
    if rx.status != "active" or rx.expires_at < _today():
        raise HTTPException(
            409,
            f"Prescription {prescription_id} ({rx.medication}) is {rx.status} (expires "
            f"{rx.expires_at}) and cannot be refilled; book an appointment with Dr. {doctor.name} "
            f"(doctor {doctor.doctor_id}) for a new prescription.",
        )
    if rx.refills_remaining <= 0:
        raise HTTPException(
            409,
            f"Prescription {prescription_id} ({rx.medication}) has no refills left; book a "
            f"follow-up with Dr. {doctor.name} (doctor {doctor.doctor_id}) to renew it.",
        )
    pending = _pending_refill(db, prescription_id)
    if pending:
        raise HTTPException(
            409,
            f"A refill of prescription {prescription_id} is already pending (refill "
            f"{pending.refill_id}, requested {pending.requested_at}).",
        )
    pharmacy = _pharmacy(db, body.pharmacy_id)
    refill = RefillRequest(
        prescription_id=prescription_id,
        pharmacy_id=pharmacy.pharmacy_id,
        status="pending",
        requested_at=REFERENCE_TIME,
    )
    rx.refills_remaining -= 1
    db.add(refill)
    db.commit()
    return _refill_out(db, refill)


@app.get("/refills", operation_id="list_my_refill_requests", response_model=RefillList)
def list_my_refill_requests(
    status: Literal["pending", "fulfilled", "denied", "cancelled"] | None = None,
    db: Session = Depends(get_db),
) -> RefillList:
    """Your refill requests, newest first."""
    stmt = (
        select(RefillRequest)
        .join(Prescription, Prescription.prescription_id == RefillRequest.prescription_id)
        .where(Prescription.patient_id == CURRENT_PATIENT_ID)
    )
    if status:
        stmt = stmt.where(RefillRequest.status == status)
    items = [
        _refill_out(db, r) for r in db.scalars(stmt.order_by(RefillRequest.requested_at.desc()))
    ]
    return RefillList(items=items, total=len(items))


@app.post(
    "/refills/{refill_id}/cancel", operation_id="cancel_refill_request", response_model=RefillOut
)
def cancel_refill_request(refill_id: int, db: Session = Depends(get_db)) -> RefillOut:
    """Withdraw a pending refill request; the refill is given back to the prescription."""
    r = db.get(RefillRequest, refill_id)
    rx = db.get(Prescription, r.prescription_id) if r else None
    if r is None or rx.patient_id != CURRENT_PATIENT_ID:
        raise HTTPException(
            404, f"Refill request {refill_id} is not one of yours; use list_my_refill_requests."
        )
    if r.status != "pending":
        raise HTTPException(
            409, f"Refill request {refill_id} is {r.status}; only pending ones can be cancelled."
        )
    r.status = "cancelled"
    rx.refills_remaining += 1
    db.commit()
    return _refill_out(db, r)


@app.get("/pharmacies", operation_id="search_pharmacies", response_model=PharmacyList)
def search_pharmacies(
    name: str | None = Query(default=None, description="Part of the pharmacy name"),
    city: str | None = None,
    open_24h: bool | None = None,
    db: Session = Depends(get_db),
) -> PharmacyList:
    """Pharmacies that accept e-prescriptions from the clinic."""
    stmt = select(Pharmacy)
    if name:
        stmt = stmt.where(func.lower(Pharmacy.name).contains(name.strip().lower()))
    if city:
        stmt = stmt.where(func.lower(Pharmacy.city) == city.strip().lower())
    if open_24h is not None:
        stmt = stmt.where(Pharmacy.open_24h == int(open_24h))
    items = [_pharmacy_out(p) for p in db.scalars(stmt.order_by(Pharmacy.pharmacy_id))]
    return PharmacyList(items=items, total=len(items))


@app.put("/me/pharmacy", operation_id="set_preferred_pharmacy", response_model=ProfileOut)
def set_preferred_pharmacy(body: PreferredPharmacyIn, db: Session = Depends(get_db)) -> ProfileOut:
    """Choose the pharmacy your prescriptions go to by default."""
    pharmacy = _pharmacy(db, body.pharmacy_id)
    p = db.get(Patient, CURRENT_PATIENT_ID)
    if p.preferred_pharmacy_id == pharmacy.pharmacy_id:
        raise HTTPException(
            409, f"Pharmacy {pharmacy.pharmacy_id} is already your preferred pharmacy."
        )
    p.preferred_pharmacy_id = pharmacy.pharmacy_id
    db.commit()
    return _profile(db)


# --------------------------------------------------------------------------- tools: insurance


@app.get("/insurance/plans", operation_id="list_insurance_plans", response_model=PlanList)
def list_insurance_plans(db: Session = Depends(get_db)) -> PlanList:
    """Insurance plans the clinic bills directly, with copay and coverage."""
    items = [
        PlanOut(
            plan_id=p.plan_id,
            provider=p.provider,
            plan_name=p.plan_name,
            copay_cents=p.copay_cents,
            coverage_percent=p.coverage_percent,
        )
        for p in db.scalars(select(InsurancePlan).order_by(InsurancePlan.plan_id))
    ]
    return PlanList(items=items, total=len(items))


@app.get("/insurance", operation_id="list_my_insurance", response_model=PolicyList)
def list_my_insurance(db: Session = Depends(get_db)) -> PolicyList:
    """Your insurance policies, their validity and which one is primary."""
    items = [_policy_out(db, p) for p in _my_policies(db)]
    return PolicyList(items=items, total=len(items))


@app.post(
    "/insurance/{policy_id}/primary",
    operation_id="set_primary_insurance",
    response_model=PolicyList,
)
def set_primary_insurance(policy_id: int, db: Session = Depends(get_db)) -> PolicyList:
    """Make one of your currently valid policies the primary one."""
    mine = _my_policies(db)
    policy = next((p for p in mine if p.policy_id == policy_id), None)
    if policy is None:
        raise HTTPException(
            404,
            f"Policy {policy_id} is not one of your policies; your policy ids: {[p.policy_id for p in mine]}.",
        )
    if policy.valid_until < _today() or policy.valid_from > _today():
        raise HTTPException(
            409,
            f"Policy {policy_id} is valid {policy.valid_from} to {policy.valid_until}, not today; "
            "only a currently valid policy can be primary.",
        )
    if policy.is_primary:
        raise HTTPException(409, f"Policy {policy_id} is already your primary policy.")
    for p in mine:
        p.is_primary = 1 if p.policy_id == policy_id else 0
    db.commit()
    return PolicyList(items=[_policy_out(db, p) for p in mine], total=len(mine))


# --------------------------------------------------------------------------- tools: billing


@app.get("/invoices", operation_id="list_my_invoices", response_model=InvoicePage)
def list_my_invoices(
    status: Literal["open", "paid", "void"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> InvoicePage:
    """Your invoices, newest first, with your total open balance; paginated."""
    offset = _parse_cursor(cursor)
    stmt = select(Invoice).where(Invoice.patient_id == CURRENT_PATIENT_ID)
    if status:
        stmt = stmt.where(Invoice.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Invoice.issued_at.desc(), Invoice.invoice_id.desc())
        .offset(offset)
        .limit(limit)
    )
    balance = db.scalar(
        select(func.coalesce(func.sum(Invoice.patient_due_cents), 0)).where(
            Invoice.patient_id == CURRENT_PATIENT_ID, Invoice.status == "open"
        )
    )
    return InvoicePage(
        items=[_invoice_out(i) for i in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
        open_balance_cents=int(balance or 0),
    )


def _my_invoice(db: Session, invoice_id: int) -> Invoice:
    inv = db.get(Invoice, invoice_id)
    if inv is None or inv.patient_id != CURRENT_PATIENT_ID:
        raise HTTPException(
            404, f"Invoice {invoice_id} is not among your invoices; use list_my_invoices."
        )
    return inv


@app.get("/invoices/{invoice_id}", operation_id="get_invoice", response_model=InvoiceOut)
def get_invoice(invoice_id: int, db: Session = Depends(get_db)) -> InvoiceOut:
    """One of your invoices."""
    return _invoice_out(_my_invoice(db, invoice_id))


@app.post("/invoices/{invoice_id}/pay", operation_id="pay_invoice", response_model=InvoiceOut)
def pay_invoice(
    invoice_id: int,
    method: Literal["card", "hsa"] = Query(
        description="card (card on file) or hsa (health savings account card)"
    ),
    db: Session = Depends(get_db),
) -> InvoiceOut:
    """Pay the patient share of an open invoice in full."""
    inv = _my_invoice(db, invoice_id)
    if inv.status == "paid":
        raise HTTPException(409, f"Invoice {invoice_id} was already paid on {inv.paid_at}.")
    if inv.status == "void":
        raise HTTPException(409, f"Invoice {invoice_id} is void; there is nothing to pay.")
    inv.status = "paid"
    inv.paid_at = REFERENCE_TIME
    inv.payment_method = method
    db.commit()
    return _invoice_out(inv)
