"""Clinic patient portal tools: doctors, free slots, appointments and invoices."""

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import Float, ForeignKey, Integer, String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

REFERENCE_TIME = "2025-03-15T09:00:00"
USER_ID = 1

app = FastAPI(title="Clinic appointments")


class Base(DeclarativeBase):
    pass


class Doctor(Base):
    __tablename__ = "doctors"
    doctor_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    specialty: Mapped[str] = mapped_column(String)


class Slot(Base):
    __tablename__ = "slots"
    slot_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    doctor_id: Mapped[int] = mapped_column(ForeignKey("doctors.doctor_id"))
    starts_at: Mapped[str] = mapped_column(String)
    is_booked: Mapped[int] = mapped_column(Integer)
    doctor: Mapped[Doctor] = relationship()


class Appointment(Base):
    __tablename__ = "appointments"
    appointment_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer)
    slot_id: Mapped[int] = mapped_column(ForeignKey("slots.slot_id"))
    reason: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String)
    created_at: Mapped[str] = mapped_column(String)


class Invoice(Base):
    __tablename__ = "invoices"
    invoice_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    appointment_id: Mapped[int] = mapped_column(ForeignKey("appointments.appointment_id"))
    user_id: Mapped[int] = mapped_column(Integer)
    amount: Mapped[float] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String)
    issued_at: Mapped[str] = mapped_column(String)
    paid_at: Mapped[str | None] = mapped_column(String, nullable=True)
    appointment: Mapped[Appointment] = relationship()


def get_db():
    """Standalone: a local file database. Under awm the runtime overrides this dependency."""
    engine = create_engine("sqlite:///clinic_appointments.db")
    with Session(engine) as db:
        yield db


class DoctorOut(BaseModel):
    doctor_id: int
    name: str
    specialty: str


class DoctorPage(BaseModel):
    items: list[DoctorOut]
    total: int


class SlotOut(BaseModel):
    slot_id: int
    doctor_id: int
    starts_at: str


class SlotPage(BaseModel):
    items: list[SlotOut]
    total: int


class AppointmentOut(BaseModel):
    appointment_id: int
    slot_id: int
    doctor_id: int
    doctor: str
    starts_at: str
    reason: str
    status: str


class AppointmentPage(BaseModel):
    items: list[AppointmentOut]
    total: int


class BookIn(BaseModel):
    slot_id: int = Field(description="A free slot (see search_slots).")
    reason: str = Field(min_length=1, max_length=200)


class RescheduleIn(BaseModel):
    new_slot_id: int = Field(description="A free slot of the same doctor.")


class InvoiceOut(BaseModel):
    invoice_id: int
    appointment_id: int
    visit: str
    amount: float
    status: str
    issued_at: str
    paid_at: str | None = None


class InvoicePage(BaseModel):
    items: list[InvoiceOut]
    total: int


def _appt_out(a: Appointment) -> AppointmentOut:
    return AppointmentOut(
        appointment_id=a.appointment_id,
        slot_id=a.slot_id,
        doctor_id=a.slot.doctor_id,
        doctor=a.slot.doctor.name,
        starts_at=a.slot.starts_at,
        reason=a.reason,
        status=a.status,
    )


def _my_appointment(db: Session, appointment_id: int) -> Appointment:
    appt = db.get(Appointment, appointment_id)
    if appt is None or appt.user_id != USER_ID:
        raise HTTPException(404, f"you have no appointment {appointment_id}; see list_my_appointments")
    return appt


def _free_slot(db: Session, slot_id: int) -> Slot:
    slot = db.get(Slot, slot_id)
    if slot is None:
        raise HTTPException(404, f"slot {slot_id} does not exist; use search_slots to find free slots")
    if slot.is_booked:
        raise HTTPException(409, f"slot {slot_id} is already taken; use search_slots(doctor_id={slot.doctor_id}) for free ones")
    if slot.starts_at < REFERENCE_TIME:
        raise HTTPException(409, f"slot {slot_id} is in the past (now is {REFERENCE_TIME})")
    return slot


@app.get("/time", operation_id="get_current_time")
def get_current_time() -> dict:
    """The clinic's current date and time (ISO-8601)."""
    return {"now": REFERENCE_TIME}


@app.get("/doctors", operation_id="list_doctors", response_model=DoctorPage)
def list_doctors(
    q: str | None = Query(None, description="Words in the doctor's name."),
    specialty: str | None = Query(None, description="general practice, orthopedics or dermatology."),
    db: Session = Depends(get_db),
):
    """Doctors of the clinic, filtered by words in the name or by specialty."""
    stmt = select(Doctor).order_by(Doctor.doctor_id)
    if q:
        stmt = stmt.where(Doctor.name.ilike(f"%{q}%"))
    if specialty:
        stmt = stmt.where(Doctor.specialty == specialty)
    doctors = db.scalars(stmt).all()
    return DoctorPage(items=[DoctorOut.model_validate(d, from_attributes=True) for d in doctors], total=len(doctors))


@app.get("/doctors/{doctor_id}/slots", operation_id="search_slots", response_model=SlotPage)
def search_slots(
    doctor_id: int,
    date: str | None = Query(None, description="YYYY-MM-DD", pattern=r"^\d{4}-\d{2}-\d{2}$"),
    limit: int = Query(10, ge=1, le=50),
    offset: int = Query(0, ge=0),
    db: Session = Depends(get_db),
):
    """Free appointment slots of one doctor from the current time on, optionally on one date; paginated."""
    if db.get(Doctor, doctor_id) is None:
        raise HTTPException(404, f"doctor {doctor_id} not found; use list_doctors")
    stmt = (
        select(Slot)
        .where(Slot.doctor_id == doctor_id, Slot.is_booked == 0, Slot.starts_at >= REFERENCE_TIME)
        .order_by(Slot.starts_at)
    )
    if date:
        stmt = stmt.where(Slot.starts_at.like(f"{date}%"))
    slots = db.scalars(stmt).all()
    page = slots[offset : offset + limit]
    return SlotPage(items=[SlotOut.model_validate(s, from_attributes=True) for s in page], total=len(slots))


@app.get("/appointments", operation_id="list_my_appointments", response_model=AppointmentPage)
def list_my_appointments(
    status: str | None = Query(None, description="booked, cancelled or completed."),
    db: Session = Depends(get_db),
):
    """The signed-in patient's appointments with doctor and time, optionally by status."""
    stmt = select(Appointment).where(Appointment.user_id == USER_ID).order_by(Appointment.appointment_id)
    if status:
        stmt = stmt.where(Appointment.status == status)
    appts = db.scalars(stmt).all()
    return AppointmentPage(items=[_appt_out(a) for a in appts], total=len(appts))


@app.get("/appointments/{appointment_id}", operation_id="get_appointment", response_model=AppointmentOut)
def get_appointment(appointment_id: int, db: Session = Depends(get_db)):
    """One of the signed-in patient's appointments."""
    return _appt_out(_my_appointment(db, appointment_id))


@app.post("/appointments", operation_id="book_appointment", response_model=AppointmentOut)
def book_appointment(body: BookIn, db: Session = Depends(get_db)):
    """Book a free slot for the signed-in patient."""
    slot = _free_slot(db, body.slot_id)
    slot.is_booked = 1
    appt = Appointment(user_id=USER_ID, slot_id=slot.slot_id, reason=body.reason.strip(), status="booked", created_at=REFERENCE_TIME)
    db.add(appt)
    db.commit()
    db.refresh(appt)
    return _appt_out(appt)


@app.post("/appointments/{appointment_id}/cancel", operation_id="cancel_appointment", response_model=AppointmentOut)
def cancel_appointment(appointment_id: int, db: Session = Depends(get_db)):
    """Cancel a booked future appointment and free its slot."""
    appt = _my_appointment(db, appointment_id)
    if appt.status != "booked":
        raise HTTPException(409, f"appointment {appointment_id} is {appt.status}; only booked appointments can be cancelled")
    appt.status = "cancelled"
    appt.slot.is_booked = 0
    db.commit()
    db.refresh(appt)
    return _appt_out(appt)


@app.post("/appointments/{appointment_id}/reschedule", operation_id="reschedule_appointment", response_model=AppointmentOut)
def reschedule_appointment(appointment_id: int, body: RescheduleIn, db: Session = Depends(get_db)):
    """Move a booked appointment to another free slot of the same doctor."""
    appt = _my_appointment(db, appointment_id)
    if appt.status != "booked":
        raise HTTPException(409, f"appointment {appointment_id} is {appt.status}; only booked appointments can move")
    slot = _free_slot(db, body.new_slot_id)
    if slot.doctor_id != appt.slot.doctor_id:
        raise HTTPException(
            400, f"slot {slot.slot_id} is with another doctor; pick a free slot of doctor {appt.slot.doctor_id}"
        )
    appt.slot.is_booked = 0
    slot.is_booked = 1
    appt.slot_id = slot.slot_id
    db.commit()
    db.refresh(appt)
    return _appt_out(appt)


@app.get("/invoices", operation_id="list_my_invoices", response_model=InvoicePage)
def list_my_invoices(
    status: str | None = Query(None, description="unpaid or paid."),
    db: Session = Depends(get_db),
):
    """The signed-in patient's invoices with the visit they belong to, optionally by status."""
    stmt = select(Invoice).where(Invoice.user_id == USER_ID).order_by(Invoice.invoice_id)
    if status:
        stmt = stmt.where(Invoice.status == status)
    invoices = db.scalars(stmt).all()
    items = [
        InvoiceOut(
            invoice_id=i.invoice_id, appointment_id=i.appointment_id, visit=i.appointment.reason,
            amount=i.amount, status=i.status, issued_at=i.issued_at, paid_at=i.paid_at,
        )
        for i in invoices
    ]
    return InvoicePage(items=items, total=len(items))


@app.post("/invoices/{invoice_id}/pay", operation_id="pay_invoice", response_model=InvoiceOut)
def pay_invoice(invoice_id: int, db: Session = Depends(get_db)):
    """Pay one of the signed-in patient's unpaid invoices in full."""
    invoice = db.get(Invoice, invoice_id)
    if invoice is None or invoice.user_id != USER_ID:
        raise HTTPException(404, f"you have no invoice {invoice_id}; see list_my_invoices")
    if invoice.status == "paid":
        raise HTTPException(409, f"invoice {invoice_id} was already paid on {invoice.paid_at}")
    invoice.status = "paid"
    invoice.paid_at = REFERENCE_TIME
    db.commit()
    return InvoiceOut(
        invoice_id=invoice.invoice_id, appointment_id=invoice.appointment_id, visit=invoice.appointment.reason,
        amount=invoice.amount, status=invoice.status, issued_at=invoice.issued_at, paid_at=invoice.paid_at,
    )
