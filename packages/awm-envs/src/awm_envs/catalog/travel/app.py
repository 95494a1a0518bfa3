"""Travel booking: search flights and hotels, book them for saved travellers, pay by
card or loyalty points, change and cancel under the fare rules. The logged-in
customer is customer 1 (Nina Petrova).

Money is integer cents (USD); one loyalty point pays for one cent. Times are
ISO-8601 UTC; a hotel night is the date it starts. "Now" is REFERENCE_TIME.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-07-01T12:00:00Z"
CURRENT_CUSTOMER_ID = 1
PASSPORT_VALID_DAYS_AFTER_TRAVEL = 90
MAX_STAY_NIGHTS = 14
CHECK_IN_HOUR = 15
MAX_PAGE = 50

FareType = Literal["basic", "flex"]
PayWith = Literal["card", "points"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class Airport(Base):
    __tablename__ = "airports"
    airport_code: Mapped[str] = mapped_column(primary_key=True)
    city: Mapped[str]
    country: Mapped[str]


class Customer(Base):
    __tablename__ = "customers"
    customer_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    loyalty_tier: Mapped[str]
    points_balance: Mapped[int]
    created_at: Mapped[str]


class Flight(Base):
    __tablename__ = "flights"
    flight_id: Mapped[int] = mapped_column(primary_key=True)
    flight_number: Mapped[str]
    origin_code: Mapped[str] = mapped_column(ForeignKey("airports.airport_code"))
    destination_code: Mapped[str] = mapped_column(ForeignKey("airports.airport_code"))
    departs_at: Mapped[str]
    arrives_at: Mapped[str]
    fare_basic_cents: Mapped[int]
    fare_flex_cents: Mapped[int]
    seats_available: Mapped[int]
    status: Mapped[str]


class Hotel(Base):
    __tablename__ = "hotels"
    hotel_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    city: Mapped[str]
    airport_code: Mapped[str] = mapped_column(ForeignKey("airports.airport_code"))
    stars: Mapped[int]


class RoomType(Base):
    __tablename__ = "room_types"
    room_type_id: Mapped[int] = mapped_column(primary_key=True)
    hotel_id: Mapped[int] = mapped_column(ForeignKey("hotels.hotel_id"))
    name: Mapped[str]
    nightly_rate_cents: Mapped[int]
    free_cancel_hours: Mapped[int]


class RoomNight(Base):
    __tablename__ = "room_nights"
    room_type_id: Mapped[int] = mapped_column(
        ForeignKey("room_types.room_type_id"), primary_key=True
    )
    night: Mapped[str] = mapped_column(primary_key=True)
    rooms_left: Mapped[int]


class Passenger(Base):
    __tablename__ = "passengers"
    passenger_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    full_name: Mapped[str]
    date_of_birth: Mapped[str]
    passport_number: Mapped[str | None]
    passport_expires: Mapped[str | None]


class Booking(Base):
    __tablename__ = "bookings"
    booking_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    reference: Mapped[str]
    status: Mapped[str]
    created_at: Mapped[str]


class Ticket(Base):
    __tablename__ = "tickets"
    ticket_id: Mapped[int] = mapped_column(primary_key=True)
    booking_id: Mapped[int] = mapped_column(ForeignKey("bookings.booking_id"))
    flight_id: Mapped[int] = mapped_column(ForeignKey("flights.flight_id"))
    passenger_id: Mapped[int] = mapped_column(ForeignKey("passengers.passenger_id"))
    fare_type: Mapped[str]
    price_cents: Mapped[int]
    paid_with: Mapped[str]
    status: Mapped[str]


class HotelStay(Base):
    __tablename__ = "hotel_stays"
    stay_id: Mapped[int] = mapped_column(primary_key=True)
    booking_id: Mapped[int] = mapped_column(ForeignKey("bookings.booking_id"))
    room_type_id: Mapped[int] = mapped_column(ForeignKey("room_types.room_type_id"))
    check_in: Mapped[str]
    check_out: Mapped[str]
    rooms: Mapped[int]
    price_cents: Mapped[int]
    paid_with: Mapped[str]
    status: Mapped[str]


class Payment(Base):
    __tablename__ = "payments"
    payment_id: Mapped[int] = mapped_column(primary_key=True)
    booking_id: Mapped[int] = mapped_column(ForeignKey("bookings.booking_id"))
    amount_cents: Mapped[int]
    method: Mapped[str]
    kind: Mapped[str]
    created_at: Mapped[str]
    note: Mapped[str]


class LedgerEntry(Base):
    __tablename__ = "loyalty_ledger"
    entry_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    booking_id: Mapped[int | None] = mapped_column(ForeignKey("bookings.booking_id"))
    points: Mapped[int]
    reason: Mapped[str]
    created_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('TRAVEL_DB', 'travel.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Travel",
    description="Flight and hotel booking for the logged-in customer (customer 1). "
    "Amounts are integer cents (USD); 1 loyalty point = 1 cent.",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"


class ProfileOut(BaseModel):
    customer_id: int
    name: str
    email: str
    loyalty_tier: str
    points_balance: int
    points_value_cents: int
    member_since: str


class AirportOut(BaseModel):
    airport_code: str
    city: str
    country: str


class AirportList(BaseModel):
    items: list[AirportOut]
    total: int


class FlightOut(BaseModel):
    flight_id: int
    flight_number: str
    origin_code: str
    destination_code: str
    departs_at: str
    arrives_at: str
    fare_basic_cents: int
    fare_flex_cents: int
    seats_available: int
    status: str
    international: bool


class FlightPage(BaseModel):
    items: list[FlightOut]
    total: int
    next_cursor: str | None


class RoomOfferOut(BaseModel):
    room_type_id: int
    hotel_id: int
    hotel_name: str
    city: str
    stars: int
    room_name: str
    nightly_rate_cents: int
    nights: int
    total_cents: int
    min_rooms_left: int
    free_cancel_hours: int


class RoomOfferPage(BaseModel):
    items: list[RoomOfferOut]
    total: int
    next_cursor: str | None


class NightOut(BaseModel):
    night: str
    rooms_left: int


class RoomTypeOut(BaseModel):
    room_type_id: int
    name: str
    nightly_rate_cents: int
    free_cancel_hours: int
    nights: list[NightOut]


class HotelOut(BaseModel):
    hotel_id: int
    name: str
    city: str
    airport_code: str
    stars: int
    room_types: list[RoomTypeOut]


class PassengerOut(BaseModel):
    passenger_id: int
    full_name: str
    date_of_birth: str
    passport_number: str | None
    passport_expires: str | None


class PassengerList(BaseModel):
    items: list[PassengerOut]
    total: int


class PassengerIn(BaseModel):
    full_name: str = Field(min_length=2, max_length=100)
    date_of_birth: str = Field(description="YYYY-MM-DD")
    passport_number: str | None = Field(default=None, min_length=5, max_length=20)
    passport_expires: str | None = Field(default=None, description="YYYY-MM-DD")


class PassportIn(BaseModel):
    passport_number: str = Field(min_length=5, max_length=20)
    passport_expires: str = Field(description="YYYY-MM-DD")


class FlightBookIn(BaseModel):
    flight_id: int
    passenger_ids: list[int] = Field(min_length=1, max_length=9)
    fare_type: FareType
    pay_with: PayWith = "card"
    booking_id: int | None = Field(
        default=None, description="Add to this existing booking; omit to start a new booking"
    )


class HotelBookIn(BaseModel):
    room_type_id: int
    check_in: str = Field(description="YYYY-MM-DD")
    check_out: str = Field(description="YYYY-MM-DD, after check_in")
    rooms: int = Field(default=1, ge=1, le=5)
    pay_with: PayWith = "card"
    booking_id: int | None = Field(
        default=None, description="Add to this existing booking; omit to start a new booking"
    )


class TicketOut(BaseModel):
    ticket_id: int
    flight_id: int
    flight_number: str
    origin_code: str
    destination_code: str
    departs_at: str
    passenger_id: int
    passenger_name: str
    fare_type: str
    price_cents: int
    paid_with: str
    status: str
    refundable: bool


class StayOut(BaseModel):
    stay_id: int
    hotel_id: int
    hotel_name: str
    room_type_id: int
    room_name: str
    check_in: str
    check_out: str
    rooms: int
    price_cents: int
    paid_with: str
    status: str
    free_cancellation_until: str


class PaymentOut(BaseModel):
    payment_id: int
    amount_cents: int
    method: str
    kind: str
    created_at: str
    note: str


class BookingSummaryOut(BaseModel):
    booking_id: int
    reference: str
    status: str
    created_at: str
    first_departure: str | None
    destinations: list[str]


class BookingPage(BaseModel):
    items: list[BookingSummaryOut]
    total: int
    next_cursor: str | None


class BookingOut(BookingSummaryOut):
    tickets: list[TicketOut]
    stays: list[StayOut]
    payments: list[PaymentOut]
    paid_cents: int


class LedgerOut(BaseModel):
    entry_id: int
    booking_id: int | None
    points: int
    reason: str
    created_at: str


class LedgerList(BaseModel):
    items: list[LedgerOut]
    total: int
    points_balance: int


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


def _date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value.strip())
    except ValueError as exc:
        raise HTTPException(400, f"{name}={value!r} is not a date; use YYYY-MM-DD.") from exc


def _today() -> date:
    return _ts(REFERENCE_TIME).date()


def _me(db: Session) -> Customer:
    return db.get(Customer, CURRENT_CUSTOMER_ID)


def _profile(db: Session) -> ProfileOut:
    c = _me(db)
    return ProfileOut(
        customer_id=c.customer_id,
        name=c.name,
        email=c.email,
        loyalty_tier=c.loyalty_tier,
        points_balance=c.points_balance,
        points_value_cents=c.points_balance,
        member_since=c.created_at,
    )


def _international(db: Session, f: Flight) -> bool:
    return db.get(Airport, f.origin_code).country != db.get(Airport, f.destination_code).country


def _flight_out(db: Session, f: Flight) -> FlightOut:
    return FlightOut(
        flight_id=f.flight_id,
        flight_number=f.flight_number,
        origin_code=f.origin_code,
        destination_code=f.destination_code,
        departs_at=f.departs_at,
        arrives_at=f.arrives_at,
        fare_basic_cents=f.fare_basic_cents,
        fare_flex_cents=f.fare_flex_cents,
        seats_available=f.seats_available,
        status=f.status,
        international=_international(db, f),
    )


def _airport(db: Session, code: str, name: str) -> Airport:
    a = db.get(Airport, code.strip().upper())
    if a is None:
        codes = sorted(db.scalars(select(Airport.airport_code)))
        raise HTTPException(404, f"Unknown {name} airport {code!r}; valid codes: {codes}.")
    return a


def _my_passenger(db: Session, passenger_id: int) -> Passenger:
    p = db.get(Passenger, passenger_id)
    if p is None or p.customer_id != CURRENT_CUSTOMER_ID:
        ids = list(
            db.scalars(
                select(Passenger.passenger_id).where(Passenger.customer_id == CURRENT_CUSTOMER_ID)
            )
        )
        raise HTTPException(
            404, f"Passenger {passenger_id} is not one of your saved travellers (ids: {ids})."
        )
    return p


def _passenger_out(p: Passenger) -> PassengerOut:
    return PassengerOut(
        passenger_id=p.passenger_id,
        full_name=p.full_name,
        date_of_birth=p.date_of_birth,
        passport_number=p.passport_number,
        passport_expires=p.passport_expires,
    )


def _my_booking(db: Session, booking_id: int) -> Booking:
    b = db.get(Booking, booking_id)
    if b is None or b.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(
            404, f"Booking {booking_id} is not one of your bookings; use list_my_bookings."
        )
    return b


def _target_booking(db: Session, booking_id: int | None) -> Booking:
    """The existing booking to add to (must be confirmed), or a new one."""
    if booking_id is not None:
        b = _my_booking(db, booking_id)
        if b.status != "confirmed":
            raise HTTPException(
                409,
                f"Booking {booking_id} is {b.status}; new items can only join a confirmed booking.",
            )
        return b
    n = (db.scalar(select(func.max(Booking.booking_id))) or 0) + 1
    b = Booking(
        customer_id=CURRENT_CUSTOMER_ID,
        reference=f"TRV-N{n:04d}",
        status="confirmed",
        created_at=REFERENCE_TIME,
    )
    db.add(b)
    db.flush()
    return b


def _charge(db: Session, booking: Booking, amount: int, pay_with: str, note: str) -> None:
    if amount <= 0:
        return
    if pay_with == "points":
        me = _me(db)
        if me.points_balance < amount:
            raise HTTPException(
                409,
                f"Paying {amount} cents with points needs {amount} points; you have "
                f"{me.points_balance}. Pay by card instead.",
            )
        me.points_balance -= amount
        db.add(
            LedgerEntry(
                customer_id=CURRENT_CUSTOMER_ID,
                booking_id=booking.booking_id,
                points=-amount,
                reason=f"Redeemed: {note}",
                created_at=REFERENCE_TIME,
            )
        )
    db.add(
        Payment(
            booking_id=booking.booking_id,
            amount_cents=amount,
            method=pay_with,
            kind="charge",
            created_at=REFERENCE_TIME,
            note=note,
        )
    )


def _refund(db: Session, booking: Booking, amount: int, paid_with: str, note: str) -> None:
    if amount <= 0:
        return
    if paid_with == "points":
        _me(db).points_balance += amount
        db.add(
            LedgerEntry(
                customer_id=CURRENT_CUSTOMER_ID,
                booking_id=booking.booking_id,
                points=amount,
                reason=f"Refunded: {note}",
                created_at=REFERENCE_TIME,
            )
        )
    db.add(
        Payment(
            booking_id=booking.booking_id,
            amount_cents=-amount,
            method=paid_with,
            kind="refund",
            created_at=REFERENCE_TIME,
            note=note,
        )
    )


def _settle_status(db: Session, booking: Booking) -> None:
    """A booking whose every ticket and stay is cancelled becomes cancelled."""
    live = db.scalar(
        select(func.count())
        .select_from(Ticket)
        .where(Ticket.booking_id == booking.booking_id, Ticket.status != "cancelled")
    ) + db.scalar(
        select(func.count())
        .select_from(HotelStay)
        .where(HotelStay.booking_id == booking.booking_id, HotelStay.status != "cancelled")
    )
    if live == 0:
        booking.status = "cancelled"


def _ticket_out(db: Session, t: Ticket) -> TicketOut:
    f = db.get(Flight, t.flight_id)
    p = db.get(Passenger, t.passenger_id)
    return TicketOut(
        ticket_id=t.ticket_id,
        flight_id=f.flight_id,
        flight_number=f.flight_number,
        origin_code=f.origin_code,
        destination_code=f.destination_code,
        departs_at=f.departs_at,
        passenger_id=p.passenger_id,
        passenger_name=p.full_name,
        fare_type=t.fare_type,
        price_cents=t.price_cents,
        paid_with=t.paid_with,
        status=t.status,
        refundable=t.fare_type == "flex" and t.status == "issued",
    )


def _free_cancel_until(db: Session, s: HotelStay) -> str:
    rt = db.get(RoomType, s.room_type_id)
    check_in = datetime.fromisoformat(s.check_in + f"T{CHECK_IN_HOUR:02d}:00:00+00:00")
    return _iso(check_in - timedelta(hours=rt.free_cancel_hours))


def _stay_out(db: Session, s: HotelStay) -> StayOut:
    rt = db.get(RoomType, s.room_type_id)
    h = db.get(Hotel, rt.hotel_id)
    return StayOut(
        stay_id=s.stay_id,
        hotel_id=h.hotel_id,
        hotel_name=h.name,
        room_type_id=rt.room_type_id,
        room_name=rt.name,
        check_in=s.check_in,
        check_out=s.check_out,
        rooms=s.rooms,
        price_cents=s.price_cents,
        paid_with=s.paid_with,
        status=s.status,
        free_cancellation_until=_free_cancel_until(db, s),
    )


def _booking_parts(db: Session, b: Booking) -> tuple[list[Ticket], list[HotelStay]]:
    tickets = list(
        db.scalars(
            select(Ticket).where(Ticket.booking_id == b.booking_id).order_by(Ticket.ticket_id)
        )
    )
    stays = list(
        db.scalars(
            select(HotelStay)
            .where(HotelStay.booking_id == b.booking_id)
            .order_by(HotelStay.stay_id)
        )
    )
    return tickets, stays


def _booking_summary(db: Session, b: Booking) -> BookingSummaryOut:
    tickets, stays = _booking_parts(db, b)
    flights = sorted((db.get(Flight, t.flight_id) for t in tickets), key=lambda f: f.departs_at)
    destinations = list(
        dict.fromkeys(
            [db.get(Airport, f.destination_code).city for f in flights]
            + [db.get(Hotel, db.get(RoomType, s.room_type_id).hotel_id).city for s in stays]
        )
    )
    return BookingSummaryOut(
        booking_id=b.booking_id,
        reference=b.reference,
        status=b.status,
        created_at=b.created_at,
        first_departure=flights[0].departs_at if flights else None,
        destinations=destinations,
    )


def _booking_out(db: Session, b: Booking) -> BookingOut:
    tickets, stays = _booking_parts(db, b)
    payments = list(
        db.scalars(
            select(Payment).where(Payment.booking_id == b.booking_id).order_by(Payment.payment_id)
        )
    )
    return BookingOut(
        **_booking_summary(db, b).model_dump(),
        tickets=[_ticket_out(db, t) for t in tickets],
        stays=[_stay_out(db, s) for s in stays],
        payments=[
            PaymentOut(
                payment_id=p.payment_id,
                amount_cents=p.amount_cents,
                method=p.method,
                kind=p.kind,
                created_at=p.created_at,
                note=p.note,
            )
            for p in payments
        ],
        paid_cents=sum(p.amount_cents for p in payments),
    )


def _bookable_flight(db: Session, flight_id: int, seats: int) -> Flight:
    f = db.get(Flight, flight_id)
    if f is None:
        raise HTTPException(404, f"Flight {flight_id} not found; use search_flights.")
    if f.status != "scheduled" or f.departs_at <= REFERENCE_TIME:
        raise HTTPException(
            409, f"Flight {f.flight_number} on {f.departs_at} is {f.status} and cannot be booked."
        )
    if f.seats_available < seats:
        raise HTTPException(
            409,
            f"Flight {f.flight_number} on {f.departs_at} has {f.seats_available} seat(s) left; "
            f"{seats} needed. Use search_flights for another departure.",
        )
    return f


def _check_passport(db: Session, f: Flight, p: Passenger) -> None:
    if not _international(db, f):
        return
    needed = (
        _ts(f.departs_at).date() + timedelta(days=PASSPORT_VALID_DAYS_AFTER_TRAVEL)
    ).isoformat()
    if not p.passport_number or not p.passport_expires:
        raise HTTPException(
            409,
            f"{p.full_name} (passenger {p.passenger_id}) has no passport on file, which the "
            f"international flight {f.flight_number} requires; add it with update_passport.",
        )
    if p.passport_expires < needed:
        raise HTTPException(
            409,
            f"{p.full_name}'s passport expires {p.passport_expires}; flight {f.flight_number} on "
            f"{f.departs_at[:10]} needs one valid until at least {needed} "
            f"({PASSPORT_VALID_DAYS_AFTER_TRAVEL} days after travel). Update it with update_passport.",
        )


def _nights(check_in: date, check_out: date) -> list[str]:
    return [(check_in + timedelta(days=i)).isoformat() for i in range((check_out - check_in).days)]


def _stay_dates(check_in: str, check_out: str) -> tuple[date, date]:
    a, b = _date(check_in, "check_in"), _date(check_out, "check_out")
    if b <= a:
        raise HTTPException(400, f"check_out {b} must be after check_in {a}.")
    if (b - a).days > MAX_STAY_NIGHTS:
        raise HTTPException(400, f"A stay can be at most {MAX_STAY_NIGHTS} nights.")
    if a < _today():
        raise HTTPException(400, f"check_in {a} is in the past; today is {_today()}.")
    return a, b


def _availability(db: Session, room_type_id: int, nights: list[str]) -> dict[str, int]:
    rows = {
        r.night: r.rooms_left
        for r in db.scalars(
            select(RoomNight).where(
                RoomNight.room_type_id == room_type_id, RoomNight.night.in_(nights)
            )
        )
    }
    return {n: rows.get(n, 0) for n in nights}


# --------------------------------------------------------------------------- tools: account


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC)."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """Your profile, loyalty tier and points balance (1 point = 1 cent)."""
    return _profile(db)


@app.get("/loyalty", operation_id="get_loyalty_ledger", response_model=LedgerList)
def get_loyalty_ledger(db: Session = Depends(get_db)) -> LedgerList:
    """Your loyalty points history, newest first, and current balance."""
    rows = db.scalars(
        select(LedgerEntry)
        .where(LedgerEntry.customer_id == CURRENT_CUSTOMER_ID)
        .order_by(LedgerEntry.created_at.desc(), LedgerEntry.entry_id.desc())
    )
    items = [
        LedgerOut(
            entry_id=e.entry_id,
            booking_id=e.booking_id,
            points=e.points,
            reason=e.reason,
            created_at=e.created_at,
        )
        for e in rows
    ]
    return LedgerList(items=items, total=len(items), points_balance=_me(db).points_balance)


@app.get("/passengers", operation_id="list_passengers", response_model=PassengerList)
def list_passengers(db: Session = Depends(get_db)) -> PassengerList:
    """Your saved travellers with their passport details."""
    items = [
        _passenger_out(p)
        for p in db.scalars(
            select(Passenger)
            .where(Passenger.customer_id == CURRENT_CUSTOMER_ID)
            .order_by(Passenger.passenger_id)
        )
    ]
    return PassengerList(items=items, total=len(items))


@app.post("/passengers", operation_id="add_passenger", response_model=PassengerOut)
def add_passenger(body: PassengerIn, db: Session = Depends(get_db)) -> PassengerOut:
    """Save a new traveller to your profile."""
    dob = _date(body.date_of_birth, "date_of_birth")
    if dob >= _today():
        raise HTTPException(400, "date_of_birth must be in the past.")
    if (body.passport_number is None) != (body.passport_expires is None):
        raise HTTPException(400, "Give both passport_number and passport_expires, or neither.")
    expires = (
        _date(body.passport_expires, "passport_expires").isoformat()
        if body.passport_expires
        else None
    )
    name = " ".join(body.full_name.split())
    dup = db.scalar(
        select(Passenger).where(
            Passenger.customer_id == CURRENT_CUSTOMER_ID,
            func.lower(Passenger.full_name) == name.lower(),
            Passenger.date_of_birth == dob.isoformat(),
        )
    )
    if dup:
        raise HTTPException(409, f"{name} is already saved as passenger {dup.passenger_id}.")
    p = Passenger(
        customer_id=CURRENT_CUSTOMER_ID,
        full_name=name,
        date_of_birth=dob.isoformat(),
        passport_number=body.passport_number.strip().upper() if body.passport_number else None,
        passport_expires=expires,
    )
    db.add(p)
    db.commit()
    return _passenger_out(p)


@app.put(
    "/passengers/{passenger_id}/passport",
    operation_id="update_passport",
    response_model=PassengerOut,
)
def update_passport(
    passenger_id: int, body: PassportIn, db: Session = Depends(get_db)
) -> PassengerOut:
    """Record a traveller's (new) passport number and expiry date."""
    p = _my_passenger(db, passenger_id)
    expires = _date(body.passport_expires, "passport_expires")
    if expires <= _today():
        raise HTTPException(400, f"That passport expired on {expires}; enter a valid one.")
    number = body.passport_number.strip().upper()
    if p.passport_number == number and p.passport_expires == expires.isoformat():
        raise HTTPException(409, f"Passenger {passenger_id} already has passport {number}.")
    p.passport_number = number
    p.passport_expires = expires.isoformat()
    db.commit()
    return _passenger_out(p)


@app.delete(
    "/passengers/{passenger_id}", operation_id="delete_passenger", response_model=PassengerList
)
def delete_passenger(passenger_id: int, db: Session = Depends(get_db)) -> PassengerList:
    """Remove a saved traveller who holds no tickets."""
    p = _my_passenger(db, passenger_id)
    if passenger_id == 1 or p.full_name == _me(db).name:
        raise HTTPException(409, "You cannot remove your own traveller profile.")
    used = db.scalar(
        select(func.count()).select_from(Ticket).where(Ticket.passenger_id == passenger_id)
    )
    if used:
        raise HTTPException(
            409, f"{p.full_name} appears on {used} ticket(s) and cannot be removed."
        )
    db.delete(p)
    db.commit()
    return list_passengers(db)


@app.patch("/me", operation_id="update_my_email", response_model=ProfileOut)
def update_my_email(
    email: str = Query(min_length=5, max_length=120), db: Session = Depends(get_db)
) -> ProfileOut:
    """Change the email address your confirmations go to."""
    email = email.strip().lower()
    if "@" not in email:
        raise HTTPException(400, f"{email!r} is not an email address.")
    taken = db.scalar(
        select(Customer).where(
            func.lower(Customer.email) == email, Customer.customer_id != CURRENT_CUSTOMER_ID
        )
    )
    if taken:
        raise HTTPException(409, f"{email} is already used by another account.")
    me = _me(db)
    if me.email == email:
        raise HTTPException(409, f"Your email is already {email}.")
    me.email = email
    db.commit()
    return _profile(db)


# --------------------------------------------------------------------------- tools: search


@app.get("/airports", operation_id="list_airports", response_model=AirportList)
def list_airports(db: Session = Depends(get_db)) -> AirportList:
    """Airports served, with city and country."""
    items = [
        AirportOut(airport_code=a.airport_code, city=a.city, country=a.country)
        for a in db.scalars(select(Airport).order_by(Airport.airport_code))
    ]
    return AirportList(items=items, total=len(items))


@app.get("/flights", operation_id="search_flights", response_model=FlightPage)
def search_flights(
    origin: str = Query(description="Airport code, e.g. JFK"),
    destination: str = Query(description="Airport code, e.g. LIS"),
    departure_date: str = Query(description="Departure date YYYY-MM-DD (UTC)"),
    min_seats: int = Query(
        default=1,
        ge=0,
        le=9,
        description="Only flights with this many free seats (0: include sold out)",
    ),
    include_cancelled: bool = False,
    sort: Literal["departure", "price_basic", "price_flex"] = "departure",
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> FlightPage:
    """Nonstop flights on one route and day; by default only scheduled flights with a free seat."""
    o = _airport(db, origin, "origin")
    d = _airport(db, destination, "destination")
    day = _date(departure_date, "departure_date").isoformat()
    offset = _parse_cursor(cursor)
    stmt = select(Flight).where(
        Flight.origin_code == o.airport_code,
        Flight.destination_code == d.airport_code,
        Flight.departs_at >= day,
        Flight.departs_at < day + "T99",
        Flight.seats_available >= min_seats,
    )
    if not include_cancelled:
        stmt = stmt.where(Flight.status != "cancelled")
    order = {
        "departure": (Flight.departs_at, Flight.flight_id),
        "price_basic": (Flight.fare_basic_cents, Flight.departs_at),
        "price_flex": (Flight.fare_flex_cents, Flight.departs_at),
    }[sort]
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(*order).offset(offset).limit(limit))
    return FlightPage(
        items=[_flight_out(db, f) for f in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/flights/{flight_id}", operation_id="get_flight", response_model=FlightOut)
def get_flight(flight_id: int, db: Session = Depends(get_db)) -> FlightOut:
    """One flight with fares, free seats and status."""
    f = db.get(Flight, flight_id)
    if f is None:
        raise HTTPException(404, f"Flight {flight_id} not found; use search_flights.")
    return _flight_out(db, f)


@app.get("/hotels", operation_id="search_hotels", response_model=RoomOfferPage)
def search_hotels(
    city: str,
    check_in: str = Query(description="YYYY-MM-DD"),
    check_out: str = Query(description="YYYY-MM-DD"),
    rooms: int = Query(default=1, ge=1, le=5),
    min_stars: int = Query(default=1, ge=1, le=5),
    max_nightly_cents: int | None = Query(default=None, ge=1),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> RoomOfferPage:
    """Room types in a city with enough rooms free on every night of the stay, cheapest first."""
    a, b = _stay_dates(check_in, check_out)
    nights = _nights(a, b)
    offset = _parse_cursor(cursor)
    hotels = list(
        db.scalars(
            select(Hotel).where(
                func.lower(Hotel.city) == city.strip().lower(), Hotel.stars >= min_stars
            )
        )
    )
    if not db.scalar(select(Hotel).where(func.lower(Hotel.city) == city.strip().lower())):
        cities = sorted(set(db.scalars(select(Hotel.city))))
        raise HTTPException(404, f"No hotels in {city!r}; cities with hotels: {cities}.")
    offers = []
    for h in hotels:
        for rt in db.scalars(select(RoomType).where(RoomType.hotel_id == h.hotel_id)):
            if max_nightly_cents is not None and rt.nightly_rate_cents > max_nightly_cents:
                continue
            left = min(_availability(db, rt.room_type_id, nights).values())
            if left < rooms:
                continue
            offers.append(
                RoomOfferOut(
                    room_type_id=rt.room_type_id,
                    hotel_id=h.hotel_id,
                    hotel_name=h.name,
                    city=h.city,
                    stars=h.stars,
                    room_name=rt.name,
                    nightly_rate_cents=rt.nightly_rate_cents,
                    nights=len(nights),
                    total_cents=rt.nightly_rate_cents * len(nights) * rooms,
                    min_rooms_left=left,
                    free_cancel_hours=rt.free_cancel_hours,
                )
            )
    offers.sort(key=lambda o: (o.nightly_rate_cents, o.room_type_id))
    return RoomOfferPage(
        items=offers[offset : offset + limit],
        total=len(offers),
        next_cursor=_next_cursor(offset, limit, len(offers)),
    )


@app.get("/hotels/{hotel_id}", operation_id="get_hotel", response_model=HotelOut)
def get_hotel(
    hotel_id: int,
    check_in: str | None = Query(default=None, description="YYYY-MM-DD; show availability from"),
    check_out: str | None = Query(default=None, description="YYYY-MM-DD; show availability until"),
    db: Session = Depends(get_db),
) -> HotelOut:
    """A hotel with its room types and rooms left per night (for the given dates, or the next 7 nights)."""
    h = db.get(Hotel, hotel_id)
    if h is None:
        raise HTTPException(404, f"Hotel {hotel_id} not found; use search_hotels.")
    if check_in and check_out:
        a, b = _stay_dates(check_in, check_out)
    else:
        a, b = _today(), _today() + timedelta(days=7)
    nights = _nights(a, b)
    room_types = [
        RoomTypeOut(
            room_type_id=rt.room_type_id,
            name=rt.name,
            nightly_rate_cents=rt.nightly_rate_cents,
            free_cancel_hours=rt.free_cancel_hours,
            nights=[
                NightOut(night=n, rooms_left=v)
                for n, v in _availability(db, rt.room_type_id, nights).items()
            ],
        )
        for rt in db.scalars(
            select(RoomType).where(RoomType.hotel_id == hotel_id).order_by(RoomType.room_type_id)
        )
    ]
    return HotelOut(
        hotel_id=h.hotel_id,
        name=h.name,
        city=h.city,
        airport_code=h.airport_code,
        stars=h.stars,
        room_types=room_types,
    )


# --------------------------------------------------------------------------- tools: bookings


@app.get("/bookings", operation_id="list_my_bookings", response_model=BookingPage)
def list_my_bookings(
    status: Literal["confirmed", "completed", "cancelled"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> BookingPage:
    """Your bookings, newest first, with reference, first departure and destinations."""
    offset = _parse_cursor(cursor)
    stmt = select(Booking).where(Booking.customer_id == CURRENT_CUSTOMER_ID)
    if status:
        stmt = stmt.where(Booking.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Booking.created_at.desc(), Booking.booking_id.desc())
        .offset(offset)
        .limit(limit)
    )
    return BookingPage(
        items=[_booking_summary(db, b) for b in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/bookings/{booking_id}", operation_id="get_booking", response_model=BookingOut)
def get_booking(booking_id: int, db: Session = Depends(get_db)) -> BookingOut:
    """One booking with its tickets, hotel stays, payments and refundability."""
    return _booking_out(db, _my_booking(db, booking_id))


@app.post("/bookings/flights", operation_id="book_flight", response_model=BookingOut)
def book_flight(body: FlightBookIn, db: Session = Depends(get_db)) -> BookingOut:
    """Buy tickets on one flight for saved travellers (basic fares are non-refundable and
    cannot be changed; flex fares can). International flights need a passport valid 90 days
    past departure."""
    ids = list(dict.fromkeys(body.passenger_ids))
    f = _bookable_flight(db, body.flight_id, len(ids))
    passengers = [_my_passenger(db, pid) for pid in ids]
    for p in passengers:
        _check_passport(db, f, p)
        already = db.scalar(
            select(Ticket).where(
                Ticket.flight_id == f.flight_id,
                Ticket.passenger_id == p.passenger_id,
                Ticket.status == "issued",
            )
        )
        if already:
            raise HTTPException(
                409,
                f"{p.full_name} already holds ticket {already.ticket_id} on flight {f.flight_number}.",
            )
    booking = _target_booking(db, body.booking_id)
    price = f.fare_basic_cents if body.fare_type == "basic" else f.fare_flex_cents
    _charge(
        db,
        booking,
        price * len(passengers),
        body.pay_with,
        f"Flight {f.flight_number} {f.origin_code}-{f.destination_code} x{len(passengers)}",
    )
    for p in passengers:
        db.add(
            Ticket(
                booking_id=booking.booking_id,
                flight_id=f.flight_id,
                passenger_id=p.passenger_id,
                fare_type=body.fare_type,
                price_cents=price,
                paid_with=body.pay_with,
                status="issued",
            )
        )
    f.seats_available -= len(passengers)
    db.commit()
    return _booking_out(db, booking)


@app.post("/bookings/hotels", operation_id="book_hotel", response_model=BookingOut)
def book_hotel(body: HotelBookIn, db: Session = Depends(get_db)) -> BookingOut:
    """Book rooms of one room type for a stay; every night must have enough rooms left."""
    rt = db.get(RoomType, body.room_type_id)
    if rt is None:
        raise HTTPException(404, f"Room type {body.room_type_id} not found; use search_hotels.")
    a, b = _stay_dates(body.check_in, body.check_out)
    nights = _nights(a, b)
    avail = _availability(db, rt.room_type_id, nights)
    short = {n: v for n, v in avail.items() if v < body.rooms}
    if short:
        raise HTTPException(
            409,
            f"Room type {rt.room_type_id} ({rt.name}) does not have {body.rooms} room(s) on every night; "
            f"rooms left on the short nights: {short}. Use search_hotels for alternatives.",
        )
    booking = _target_booking(db, body.booking_id)
    price = rt.nightly_rate_cents * len(nights) * body.rooms
    hotel = db.get(Hotel, rt.hotel_id)
    _charge(db, booking, price, body.pay_with, f"Hotel {hotel.name} {a}..{b}")
    for night in db.scalars(
        select(RoomNight).where(
            RoomNight.room_type_id == rt.room_type_id, RoomNight.night.in_(nights)
        )
    ):
        night.rooms_left -= body.rooms
    db.add(
        HotelStay(
            booking_id=booking.booking_id,
            room_type_id=rt.room_type_id,
            check_in=a.isoformat(),
            check_out=b.isoformat(),
            rooms=body.rooms,
            price_cents=price,
            paid_with=body.pay_with,
            status="confirmed",
        )
    )
    db.commit()
    return _booking_out(db, booking)


def _my_ticket(db: Session, ticket_id: int) -> tuple[Ticket, Booking]:
    t = db.get(Ticket, ticket_id)
    b = db.get(Booking, t.booking_id) if t else None
    if t is None or b.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(404, f"Ticket {ticket_id} is not one of yours; see get_booking.")
    return t, b


@app.post("/tickets/{ticket_id}/cancel", operation_id="cancel_ticket", response_model=BookingOut)
def cancel_ticket(ticket_id: int, db: Session = Depends(get_db)) -> BookingOut:
    """Cancel a flex ticket before departure for a full refund to the way it was paid.
    Basic fares are non-refundable and cannot be cancelled."""
    t, b = _my_ticket(db, ticket_id)
    f = db.get(Flight, t.flight_id)
    if t.status != "issued":
        raise HTTPException(
            409, f"Ticket {ticket_id} is {t.status}; only issued tickets can be cancelled."
        )
    if t.fare_type != "flex":
        raise HTTPException(
            409,
            f"Ticket {ticket_id} ({f.flight_number} on {f.departs_at[:10]}) is a basic fare, which is "
            "non-refundable and cannot be cancelled or changed.",
        )
    if f.departs_at <= REFERENCE_TIME:
        raise HTTPException(409, f"Flight {f.flight_number} has already departed.")
    t.status = "cancelled"
    f.seats_available += 1
    _refund(db, b, t.price_cents, t.paid_with, f"Ticket {ticket_id} cancelled")
    _settle_status(db, b)
    db.commit()
    return _booking_out(db, b)


@app.post("/tickets/{ticket_id}/change", operation_id="change_flight", response_model=BookingOut)
def change_flight(
    ticket_id: int,
    new_flight_id: int = Query(description="Another flight on the same route"),
    pay_with: PayWith = "card",
    db: Session = Depends(get_db),
) -> BookingOut:
    """Move a flex ticket to another flight on the same route. A higher flex fare is charged
    as the difference; a lower one is not refunded."""
    t, b = _my_ticket(db, ticket_id)
    old = db.get(Flight, t.flight_id)
    if t.status != "issued" or t.fare_type != "flex":
        raise HTTPException(
            409,
            f"Ticket {ticket_id} is a {t.status} {t.fare_type} ticket; only issued flex tickets can change flight.",
        )
    if old.departs_at <= REFERENCE_TIME:
        raise HTTPException(409, f"Flight {old.flight_number} has already departed.")
    new = _bookable_flight(db, new_flight_id, 1)
    if (new.origin_code, new.destination_code) != (old.origin_code, old.destination_code):
        raise HTTPException(
            409,
            f"Flight {new.flight_number} flies {new.origin_code}-{new.destination_code}; the ticket is for "
            f"{old.origin_code}-{old.destination_code}.",
        )
    if new.flight_id == old.flight_id:
        raise HTTPException(409, f"Ticket {ticket_id} is already on flight {new.flight_number}.")
    _check_passport(db, new, db.get(Passenger, t.passenger_id))
    difference = new.fare_flex_cents - t.price_cents
    _charge(
        db, b, difference, pay_with, f"Fare difference, ticket {ticket_id} to {new.flight_number}"
    )
    old.seats_available += 1
    new.seats_available -= 1
    t.flight_id = new.flight_id
    t.price_cents = max(t.price_cents, new.fare_flex_cents)
    db.commit()
    return _booking_out(db, b)


@app.post("/stays/{stay_id}/cancel", operation_id="cancel_hotel_stay", response_model=BookingOut)
def cancel_hotel_stay(stay_id: int, db: Session = Depends(get_db)) -> BookingOut:
    """Cancel a hotel stay for a full refund, up to the room type's free-cancellation deadline."""
    s = db.get(HotelStay, stay_id)
    b = db.get(Booking, s.booking_id) if s else None
    if s is None or b.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(404, f"Hotel stay {stay_id} is not one of yours; see get_booking.")
    if s.status != "confirmed":
        raise HTTPException(
            409, f"Stay {stay_id} is {s.status}; only confirmed stays can be cancelled."
        )
    deadline = _free_cancel_until(db, s)
    if REFERENCE_TIME > deadline:
        raise HTTPException(
            409,
            f"Free cancellation for stay {stay_id} ended at {deadline}; it can no longer be cancelled.",
        )
    s.status = "cancelled"
    nights = _nights(date.fromisoformat(s.check_in), date.fromisoformat(s.check_out))
    for night in db.scalars(
        select(RoomNight).where(
            RoomNight.room_type_id == s.room_type_id, RoomNight.night.in_(nights)
        )
    ):
        night.rooms_left += s.rooms
    _refund(db, b, s.price_cents, s.paid_with, f"Hotel stay {stay_id} cancelled")
    _settle_status(db, b)
    db.commit()
    return _booking_out(db, b)
