"""Apartment rentals: listings of units in properties, saved listings, viewings,
rental applications, the renter's lease, rent invoices and maintenance requests.
The logged-in renter is user 1 (Sofia Alvarez).

Money is integer cents (USD). Times are ISO-8601 UTC; dates are YYYY-MM-DD.
"Now" is REFERENCE_TIME.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, or_, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-07-14T09:00:00Z"
TODAY = REFERENCE_TIME[:10]
CURRENT_USER_ID = 1
INCOME_MULTIPLE = 3
MAX_OPEN_APPLICATIONS = 3
GRACE_DAYS = 5
LATE_FEE_CENTS = 7500
NOTICE_DAYS = 30
VIEWING_HOURS = range(9, 18)
MAX_PAGE = 50

Neighborhood = Literal["Downtown", "East Austin", "Hyde Park", "Mueller", "South Congress"]
MaintenanceCategory = Literal[
    "plumbing", "electrical", "appliance", "heating_cooling", "pest", "other"
]
Priority = Literal["low", "normal", "urgent"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]
    joined_at: Mapped[str]


class Landlord(Base):
    __tablename__ = "landlords"
    landlord_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]


class Property(Base):
    __tablename__ = "properties"
    property_id: Mapped[int] = mapped_column(primary_key=True)
    landlord_id: Mapped[int] = mapped_column(ForeignKey("landlords.landlord_id"))
    name: Mapped[str]
    address: Mapped[str]
    neighborhood: Mapped[str]
    pets_allowed: Mapped[int]
    has_parking: Mapped[int]


class Unit(Base):
    __tablename__ = "units"
    unit_id: Mapped[int] = mapped_column(primary_key=True)
    property_id: Mapped[int] = mapped_column(ForeignKey("properties.property_id"))
    unit_number: Mapped[str]
    bedrooms: Mapped[int]
    bathrooms: Mapped[float]
    sqft: Mapped[int]


class Listing(Base):
    __tablename__ = "listings"
    listing_id: Mapped[int] = mapped_column(primary_key=True)
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.unit_id"))
    monthly_rent_cents: Mapped[int]
    deposit_cents: Mapped[int]
    available_from: Mapped[str]
    min_lease_months: Mapped[int]
    status: Mapped[str]
    listed_at: Mapped[str]


class SavedListing(Base):
    __tablename__ = "saved_listings"
    saved_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    listing_id: Mapped[int] = mapped_column(ForeignKey("listings.listing_id"))
    saved_at: Mapped[str]


class Viewing(Base):
    __tablename__ = "viewings"
    viewing_id: Mapped[int] = mapped_column(primary_key=True)
    listing_id: Mapped[int] = mapped_column(ForeignKey("listings.listing_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    scheduled_at: Mapped[str]
    status: Mapped[str]
    created_at: Mapped[str]


class Application(Base):
    __tablename__ = "applications"
    application_id: Mapped[int] = mapped_column(primary_key=True)
    listing_id: Mapped[int] = mapped_column(ForeignKey("listings.listing_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    monthly_income_cents: Mapped[int]
    move_in_date: Mapped[str]
    note: Mapped[str]
    status: Mapped[str]
    submitted_at: Mapped[str]


class Lease(Base):
    __tablename__ = "leases"
    lease_id: Mapped[int] = mapped_column(primary_key=True)
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.unit_id"))
    tenant_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    start_date: Mapped[str]
    end_date: Mapped[str]
    monthly_rent_cents: Mapped[int]
    deposit_cents: Mapped[int]
    status: Mapped[str]
    notice_given_on: Mapped[str | None]
    move_out_date: Mapped[str | None]


class Invoice(Base):
    __tablename__ = "rent_invoices"
    invoice_id: Mapped[int] = mapped_column(primary_key=True)
    lease_id: Mapped[int] = mapped_column(ForeignKey("leases.lease_id"))
    period: Mapped[str]
    amount_cents: Mapped[int]
    due_date: Mapped[str]
    status: Mapped[str]
    late_fee_cents: Mapped[int]
    paid_at: Mapped[str | None]


class MaintenanceRequest(Base):
    __tablename__ = "maintenance_requests"
    request_id: Mapped[int] = mapped_column(primary_key=True)
    lease_id: Mapped[int] = mapped_column(ForeignKey("leases.lease_id"))
    category: Mapped[str]
    description: Mapped[str]
    priority: Mapped[str]
    entry_permitted: Mapped[int]
    status: Mapped[str]
    created_at: Mapped[str]
    updated_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only for serving the app on its own; the awm runtime overrides get_db.
    return create_engine(f"sqlite:///{os.environ.get('RENTALS_DB', 'rentals.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Rentals",
    description="Apartment search, viewings, applications, lease, rent and maintenance for the "
    "logged-in renter (user 1). Amounts are integer cents.",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    today: str
    timezone: str = "UTC"


class ProfileOut(BaseModel):
    user_id: int
    name: str
    email: str
    phone: str
    member_since: str


class ListingOut(BaseModel):
    listing_id: int
    property_id: int
    property_name: str
    address: str
    neighborhood: str
    unit_number: str
    bedrooms: int
    bathrooms: float
    sqft: int
    monthly_rent_cents: int
    deposit_cents: int
    min_income_cents: int
    available_from: str
    min_lease_months: int
    pets_allowed: bool
    has_parking: bool
    status: str
    listed_at: str


class ListingPage(BaseModel):
    items: list[ListingOut]
    total: int
    next_cursor: str | None


class ListingDetailOut(ListingOut):
    landlord_name: str
    landlord_phone: str
    saved: bool
    my_application_status: str | None


class SlotOut(BaseModel):
    starts_at: str
    free: bool


class SlotList(BaseModel):
    listing_id: int
    date: str
    items: list[SlotOut]
    total: int


class ViewingIn(BaseModel):
    listing_id: int
    scheduled_at: str = Field(description="Start of a free slot, e.g. 2025-07-17T11:00:00Z")


class ViewingOut(BaseModel):
    viewing_id: int
    listing_id: int
    property_name: str
    unit_number: str
    scheduled_at: str
    status: str


class ViewingList(BaseModel):
    items: list[ViewingOut]
    total: int


class ApplicationIn(BaseModel):
    listing_id: int
    monthly_income_cents: int = Field(gt=0, description="Gross monthly income in cents")
    move_in_date: str = Field(description="YYYY-MM-DD, on or after the listing's available_from")
    note: str = Field(default="", max_length=500)


class ApplicationOut(BaseModel):
    application_id: int
    listing_id: int
    property_name: str
    unit_number: str
    monthly_income_cents: int
    move_in_date: str
    note: str
    status: str
    submitted_at: str


class ApplicationList(BaseModel):
    items: list[ApplicationOut]
    total: int


class SavedOut(BaseModel):
    saved_id: int
    saved_at: str
    listing: ListingOut


class SavedList(BaseModel):
    items: list[SavedOut]
    total: int


class LeaseOut(BaseModel):
    lease_id: int
    property_name: str
    address: str
    unit_number: str
    start_date: str
    end_date: str
    monthly_rent_cents: int
    deposit_cents: int
    status: str
    notice_given_on: str | None
    move_out_date: str | None
    landlord_name: str


class LeaseList(BaseModel):
    items: list[LeaseOut]
    total: int


class NoticeIn(BaseModel):
    move_out_date: str = Field(description="YYYY-MM-DD")


class InvoiceOut(BaseModel):
    invoice_id: int
    lease_id: int
    period: str
    amount_cents: int
    due_date: str
    status: str
    late_fee_cents: int
    amount_due_now_cents: int
    paid_at: str | None


class InvoicePage(BaseModel):
    items: list[InvoiceOut]
    total: int
    next_cursor: str | None


class MaintenanceIn(BaseModel):
    category: MaintenanceCategory
    description: str = Field(min_length=5, max_length=1000)
    priority: Priority = "normal"
    entry_permitted: bool = Field(default=True, description="May staff enter when you are not home")


class MaintenanceOut(BaseModel):
    request_id: int
    lease_id: int
    category: str
    description: str
    priority: str
    entry_permitted: bool
    status: str
    created_at: str
    updated_at: str


class MaintenanceList(BaseModel):
    items: list[MaintenanceOut]
    total: int


# --------------------------------------------------------------------------- helpers


def _parse_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit():
        raise HTTPException(
            400, f"Invalid cursor {cursor!r}: pass next_cursor from the previous page."
        )
    return int(cursor)


def _next_cursor(offset: int, limit: int, total: int) -> str | None:
    return str(offset + limit) if offset + limit < total else None


def _date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError as exc:
        raise HTTPException(400, f"{name} must be a date YYYY-MM-DD, got {value!r}.") from exc


def _listing_out(db: Session, listing: Listing) -> ListingOut:
    u = db.get(Unit, listing.unit_id)
    p = db.get(Property, u.property_id)
    return ListingOut(
        listing_id=listing.listing_id,
        property_id=p.property_id,
        property_name=p.name,
        address=p.address,
        neighborhood=p.neighborhood,
        unit_number=u.unit_number,
        bedrooms=u.bedrooms,
        bathrooms=u.bathrooms,
        sqft=u.sqft,
        monthly_rent_cents=listing.monthly_rent_cents,
        deposit_cents=listing.deposit_cents,
        min_income_cents=listing.monthly_rent_cents * INCOME_MULTIPLE,
        available_from=listing.available_from,
        min_lease_months=listing.min_lease_months,
        pets_allowed=bool(p.pets_allowed),
        has_parking=bool(p.has_parking),
        status=listing.status,
        listed_at=listing.listed_at,
    )


def _listing(db: Session, listing_id: int) -> Listing:
    listing = db.get(Listing, listing_id)
    if listing is None:
        raise HTTPException(
            404, f"Listing {listing_id} not found; find listings with search_listings."
        )
    return listing


def _active_listing(db: Session, listing_id: int) -> Listing:
    listing = _listing(db, listing_id)
    if listing.status != "active":
        raise HTTPException(
            409, f"Listing {listing_id} is {listing.status} and no longer available."
        )
    return listing


def _viewing_out(db: Session, v: Viewing) -> ViewingOut:
    out = _listing_out(db, db.get(Listing, v.listing_id))
    return ViewingOut(
        viewing_id=v.viewing_id,
        listing_id=v.listing_id,
        property_name=out.property_name,
        unit_number=out.unit_number,
        scheduled_at=v.scheduled_at,
        status=v.status,
    )


def _application_out(db: Session, a: Application) -> ApplicationOut:
    out = _listing_out(db, db.get(Listing, a.listing_id))
    return ApplicationOut(
        application_id=a.application_id,
        listing_id=a.listing_id,
        property_name=out.property_name,
        unit_number=out.unit_number,
        monthly_income_cents=a.monthly_income_cents,
        move_in_date=a.move_in_date,
        note=a.note,
        status=a.status,
        submitted_at=a.submitted_at,
    )


def _taken_slots(db: Session, listing_id: int) -> set[str]:
    return set(
        db.scalars(
            select(Viewing.scheduled_at).where(
                Viewing.listing_id == listing_id, Viewing.status == "scheduled"
            )
        )
    )


def _check_slot(db: Session, listing_id: int, when: str, ignore: int | None = None) -> str:
    try:
        dt = datetime.strptime(when.strip().replace("Z", ""), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        try:
            dt = datetime.strptime(when.strip().replace("Z", ""), "%Y-%m-%dT%H:%M")
        except ValueError as exc:
            raise HTTPException(
                400, f"scheduled_at must look like 2025-07-17T11:00:00Z, got {when!r}."
            ) from exc
    iso = dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    if dt.minute or dt.second or dt.hour not in VIEWING_HOURS:
        raise HTTPException(
            400, "Viewings start on the hour between 09:00 and 17:00; see list_viewing_slots."
        )
    if iso <= REFERENCE_TIME:
        raise HTTPException(400, f"{iso} is in the past; it is now {REFERENCE_TIME}.")
    if dt > datetime.strptime(TODAY, "%Y-%m-%d") + timedelta(days=30):
        raise HTTPException(400, "Viewings can be booked at most 30 days ahead.")
    clash = db.scalar(
        select(Viewing).where(
            Viewing.listing_id == listing_id,
            Viewing.scheduled_at == iso,
            Viewing.status == "scheduled",
            Viewing.viewing_id != (ignore or 0),
        )
    )
    if clash:
        free = [s.starts_at for s in _slots(db, listing_id, iso[:10]).items if s.free]
        raise HTTPException(
            409, f"The {iso} slot for listing {listing_id} is taken; free slots that day: {free}."
        )
    mine = db.scalar(
        select(Viewing).where(
            Viewing.user_id == CURRENT_USER_ID,
            Viewing.scheduled_at == iso,
            Viewing.status == "scheduled",
            Viewing.viewing_id != (ignore or 0),
        )
    )
    if mine:
        raise HTTPException(
            409, f"You already have viewing {mine.viewing_id} at {iso}; pick another time."
        )
    return iso


def _slots(db: Session, listing_id: int, day: str) -> SlotList:
    d = _date(day, "date")
    taken = _taken_slots(db, listing_id)
    items = []
    for hour in VIEWING_HOURS:
        iso = f"{d.isoformat()}T{hour:02d}:00:00Z"
        items.append(SlotOut(starts_at=iso, free=iso > REFERENCE_TIME and iso not in taken))
    return SlotList(listing_id=listing_id, date=d.isoformat(), items=items, total=len(items))


def _my_viewing(db: Session, viewing_id: int) -> Viewing:
    v = db.get(Viewing, viewing_id)
    if v is None or v.user_id != CURRENT_USER_ID:
        raise HTTPException(
            404, f"Viewing {viewing_id} is not one of your viewings; see list_my_viewings."
        )
    return v


def _lease_out(db: Session, lease: Lease) -> LeaseOut:
    u = db.get(Unit, lease.unit_id)
    p = db.get(Property, u.property_id)
    return LeaseOut(
        lease_id=lease.lease_id,
        property_name=p.name,
        address=p.address,
        unit_number=u.unit_number,
        start_date=lease.start_date,
        end_date=lease.end_date,
        monthly_rent_cents=lease.monthly_rent_cents,
        deposit_cents=lease.deposit_cents,
        status=lease.status,
        notice_given_on=lease.notice_given_on,
        move_out_date=lease.move_out_date,
        landlord_name=db.get(Landlord, p.landlord_id).name,
    )


def _my_lease_ids(db: Session) -> list[int]:
    return list(db.scalars(select(Lease.lease_id).where(Lease.tenant_id == CURRENT_USER_ID)))


def _active_lease(db: Session) -> Lease:
    lease = db.scalar(
        select(Lease).where(Lease.tenant_id == CURRENT_USER_ID, Lease.status == "active")
    )
    if lease is None:
        raise HTTPException(409, "You have no active lease.")
    return lease


def _late_fee_now(inv: Invoice) -> int:
    grace_end = date.fromisoformat(inv.due_date) + timedelta(days=GRACE_DAYS)
    return LATE_FEE_CENTS if date.fromisoformat(TODAY) > grace_end else 0


def _invoice_out(inv: Invoice) -> InvoiceOut:
    fee = inv.late_fee_cents if inv.status == "paid" else _late_fee_now(inv)
    return InvoiceOut(
        invoice_id=inv.invoice_id,
        lease_id=inv.lease_id,
        period=inv.period,
        amount_cents=inv.amount_cents,
        due_date=inv.due_date,
        status=inv.status,
        late_fee_cents=fee,
        amount_due_now_cents=0 if inv.status == "paid" else inv.amount_cents + fee,
        paid_at=inv.paid_at,
    )


def _maintenance_out(m: MaintenanceRequest) -> MaintenanceOut:
    return MaintenanceOut(
        request_id=m.request_id,
        lease_id=m.lease_id,
        category=m.category,
        description=m.description,
        priority=m.priority,
        entry_permitted=bool(m.entry_permitted),
        status=m.status,
        created_at=m.created_at,
        updated_at=m.updated_at,
    )


def _my_request(db: Session, request_id: int) -> MaintenanceRequest:
    m = db.get(MaintenanceRequest, request_id)
    if m is None or m.lease_id not in _my_lease_ids(db):
        raise HTTPException(
            404,
            f"Maintenance request {request_id} is not one of yours; see list_maintenance_requests.",
        )
    return m


# --------------------------------------------------------------------------- tools: time, profile, listings


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC); rent due dates and viewing slots are compared with it."""
    return CurrentTimeOut(current_time=REFERENCE_TIME, today=TODAY)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """The logged-in renter's profile."""
    u = db.get(User, CURRENT_USER_ID)
    return ProfileOut(
        user_id=u.user_id, name=u.name, email=u.email, phone=u.phone, member_since=u.joined_at
    )


@app.get("/listings", operation_id="search_listings", response_model=ListingPage)
def search_listings(
    query: str | None = Query(default=None, description="Words in the property name or address"),
    neighborhood: Neighborhood | None = None,
    bedrooms: int | None = Query(default=None, ge=0, le=6, description="Exact bedroom count"),
    min_rent_cents: int | None = Query(default=None, ge=0),
    max_rent_cents: int | None = Query(default=None, ge=0),
    pets_allowed: bool | None = None,
    has_parking: bool | None = None,
    available_by: str | None = Query(
        default=None, description="Only units available on or before this date, YYYY-MM-DD"
    ),
    sort: Literal["newest", "rent_asc", "rent_desc"] = "newest",
    limit: int = Query(default=5, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> ListingPage:
    """Search active listings; newest first unless sorted by rent; paginated (pass next_cursor)."""
    offset = _parse_cursor(cursor)
    stmt = (
        select(Listing)
        .join(Unit, Unit.unit_id == Listing.unit_id)
        .join(Property, Property.property_id == Unit.property_id)
        .where(Listing.status == "active")
    )
    if query:
        q = f"%{query.strip().lower()}%"
        stmt = stmt.where(
            or_(func.lower(Property.name).like(q), func.lower(Property.address).like(q))
        )
    if neighborhood:
        stmt = stmt.where(Property.neighborhood == neighborhood)
    if bedrooms is not None:
        stmt = stmt.where(Unit.bedrooms == bedrooms)
    if min_rent_cents is not None:
        stmt = stmt.where(Listing.monthly_rent_cents >= min_rent_cents)
    if max_rent_cents is not None:
        stmt = stmt.where(Listing.monthly_rent_cents <= max_rent_cents)
    if pets_allowed is not None:
        stmt = stmt.where(Property.pets_allowed == int(pets_allowed))
    if has_parking is not None:
        stmt = stmt.where(Property.has_parking == int(has_parking))
    if available_by:
        stmt = stmt.where(Listing.available_from <= _date(available_by, "available_by").isoformat())
    order = {
        "newest": (Listing.listed_at.desc(), Listing.listing_id.desc()),
        "rent_asc": (Listing.monthly_rent_cents, Listing.listing_id),
        "rent_desc": (Listing.monthly_rent_cents.desc(), Listing.listing_id),
    }[sort]
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(*order).offset(offset).limit(limit))
    return ListingPage(
        items=[_listing_out(db, x) for x in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/listings/{listing_id}", operation_id="get_listing", response_model=ListingDetailOut)
def get_listing(listing_id: int, db: Session = Depends(get_db)) -> ListingDetailOut:
    """One listing with the landlord's contact, whether you saved it and your application status."""
    listing = _listing(db, listing_id)
    out = _listing_out(db, listing)
    landlord = db.get(Landlord, db.get(Property, out.property_id).landlord_id)
    saved = db.scalar(
        select(SavedListing).where(
            SavedListing.user_id == CURRENT_USER_ID, SavedListing.listing_id == listing_id
        )
    )
    app_status = db.scalar(
        select(Application.status)
        .where(Application.user_id == CURRENT_USER_ID, Application.listing_id == listing_id)
        .order_by(Application.application_id.desc())
    )
    return ListingDetailOut(
        **out.model_dump(),
        landlord_name=landlord.name,
        landlord_phone=landlord.phone,
        saved=saved is not None,
        my_application_status=app_status,
    )


# --------------------------------------------------------------------------- tools: saved listings


@app.get("/saved", operation_id="list_saved_listings", response_model=SavedList)
def list_saved_listings(db: Session = Depends(get_db)) -> SavedList:
    """Listings you saved (including ones since rented or withdrawn), most recent first."""
    rows = db.scalars(
        select(SavedListing)
        .where(SavedListing.user_id == CURRENT_USER_ID)
        .order_by(SavedListing.saved_at.desc(), SavedListing.saved_id.desc())
    )
    items = [
        SavedOut(
            saved_id=s.saved_id,
            saved_at=s.saved_at,
            listing=_listing_out(db, db.get(Listing, s.listing_id)),
        )
        for s in rows
    ]
    return SavedList(items=items, total=len(items))


@app.post("/saved/{listing_id}", operation_id="save_listing", response_model=SavedOut)
def save_listing(listing_id: int, db: Session = Depends(get_db)) -> SavedOut:
    """Save an active listing to your list."""
    listing = _active_listing(db, listing_id)
    if db.scalar(
        select(SavedListing).where(
            SavedListing.user_id == CURRENT_USER_ID, SavedListing.listing_id == listing_id
        )
    ):
        raise HTTPException(409, f"Listing {listing_id} is already saved.")
    s = SavedListing(user_id=CURRENT_USER_ID, listing_id=listing_id, saved_at=REFERENCE_TIME)
    db.add(s)
    db.commit()
    return SavedOut(saved_id=s.saved_id, saved_at=s.saved_at, listing=_listing_out(db, listing))


@app.delete("/saved/{listing_id}", operation_id="unsave_listing", response_model=SavedList)
def unsave_listing(listing_id: int, db: Session = Depends(get_db)) -> SavedList:
    """Remove a listing from your saved list; returns the remaining saved listings."""
    s = db.scalar(
        select(SavedListing).where(
            SavedListing.user_id == CURRENT_USER_ID, SavedListing.listing_id == listing_id
        )
    )
    if s is None:
        raise HTTPException(
            404, f"Listing {listing_id} is not in your saved list; see list_saved_listings."
        )
    db.delete(s)
    db.commit()
    return list_saved_listings(db)


# --------------------------------------------------------------------------- tools: viewings


@app.get("/listings/{listing_id}/slots", operation_id="list_viewing_slots", response_model=SlotList)
def list_viewing_slots(listing_id: int, date: str, db: Session = Depends(get_db)) -> SlotList:
    """The hourly viewing slots (09:00-17:00) of a listing on a date (YYYY-MM-DD), free or taken."""
    _active_listing(db, listing_id)
    return _slots(db, listing_id, date)


@app.post("/viewings", operation_id="schedule_viewing", response_model=ViewingOut)
def schedule_viewing(body: ViewingIn, db: Session = Depends(get_db)) -> ViewingOut:
    """Book a viewing of an active listing in a free hourly slot (at most 30 days ahead)."""
    _active_listing(db, body.listing_id)
    existing = db.scalar(
        select(Viewing).where(
            Viewing.user_id == CURRENT_USER_ID,
            Viewing.listing_id == body.listing_id,
            Viewing.status == "scheduled",
        )
    )
    if existing:
        raise HTTPException(
            409,
            f"You already have viewing {existing.viewing_id} of listing {body.listing_id} at "
            f"{existing.scheduled_at}; use reschedule_viewing to move it.",
        )
    iso = _check_slot(db, body.listing_id, body.scheduled_at)
    v = Viewing(
        listing_id=body.listing_id,
        user_id=CURRENT_USER_ID,
        scheduled_at=iso,
        status="scheduled",
        created_at=REFERENCE_TIME,
    )
    db.add(v)
    db.commit()
    return _viewing_out(db, v)


@app.get("/viewings", operation_id="list_my_viewings", response_model=ViewingList)
def list_my_viewings(
    status: Literal["scheduled", "completed", "cancelled"] | None = None,
    db: Session = Depends(get_db),
) -> ViewingList:
    """Your viewings, by time."""
    stmt = select(Viewing).where(Viewing.user_id == CURRENT_USER_ID)
    if status:
        stmt = stmt.where(Viewing.status == status)
    items = [_viewing_out(db, v) for v in db.scalars(stmt.order_by(Viewing.scheduled_at))]
    return ViewingList(items=items, total=len(items))


@app.post(
    "/viewings/{viewing_id}/reschedule",
    operation_id="reschedule_viewing",
    response_model=ViewingOut,
)
def reschedule_viewing(
    viewing_id: int,
    scheduled_at: str = Query(description="New slot start, e.g. 2025-07-18T15:00:00Z"),
    db: Session = Depends(get_db),
) -> ViewingOut:
    """Move one of your scheduled viewings to another free slot of the same listing."""
    v = _my_viewing(db, viewing_id)
    if v.status != "scheduled":
        raise HTTPException(
            409, f"Viewing {viewing_id} is {v.status}; only scheduled viewings can move."
        )
    _active_listing(db, v.listing_id)
    v.scheduled_at = _check_slot(db, v.listing_id, scheduled_at, ignore=v.viewing_id)
    db.commit()
    return _viewing_out(db, v)


@app.post("/viewings/{viewing_id}/cancel", operation_id="cancel_viewing", response_model=ViewingOut)
def cancel_viewing(viewing_id: int, db: Session = Depends(get_db)) -> ViewingOut:
    """Cancel one of your scheduled viewings."""
    v = _my_viewing(db, viewing_id)
    if v.status != "scheduled":
        raise HTTPException(
            409, f"Viewing {viewing_id} is {v.status}; only scheduled viewings can be cancelled."
        )
    v.status = "cancelled"
    db.commit()
    return _viewing_out(db, v)


# --------------------------------------------------------------------------- tools: applications


@app.post("/applications", operation_id="submit_application", response_model=ApplicationOut)
def submit_application(body: ApplicationIn, db: Session = Depends(get_db)) -> ApplicationOut:
    """Apply to rent a listing. Income must be at least 3x the rent; at most 3 pending applications."""
    listing = _active_listing(db, body.listing_id)
    move_in = _date(body.move_in_date, "move_in_date").isoformat()
    previous = db.scalar(
        select(Application)
        .where(Application.user_id == CURRENT_USER_ID, Application.listing_id == listing.listing_id)
        .where(Application.status.in_(("submitted", "approved", "rejected")))
    )
    if previous:
        raise HTTPException(
            409,
            f"You already applied to listing {listing.listing_id} (application "
            f"{previous.application_id}, {previous.status}); you cannot apply again.",
        )
    need = listing.monthly_rent_cents * INCOME_MULTIPLE
    if body.monthly_income_cents < need:
        raise HTTPException(
            409,
            f"Listing {listing.listing_id} requires a monthly income of at least {need} cents "
            f"({INCOME_MULTIPLE}x the rent of {listing.monthly_rent_cents}); you stated "
            f"{body.monthly_income_cents}.",
        )
    if move_in < listing.available_from or move_in < TODAY:
        raise HTTPException(
            400,
            f"move_in_date must be on or after {max(listing.available_from, TODAY)} "
            f"(the unit is available from {listing.available_from}).",
        )
    pending = list(
        db.scalars(
            select(Application.application_id).where(
                Application.user_id == CURRENT_USER_ID, Application.status == "submitted"
            )
        )
    )
    if len(pending) >= MAX_OPEN_APPLICATIONS:
        raise HTTPException(
            409,
            f"You already have {len(pending)} pending applications {pending}; withdraw one with "
            "withdraw_application first.",
        )
    a = Application(
        listing_id=listing.listing_id,
        user_id=CURRENT_USER_ID,
        monthly_income_cents=body.monthly_income_cents,
        move_in_date=move_in,
        note=body.note.strip(),
        status="submitted",
        submitted_at=REFERENCE_TIME,
    )
    db.add(a)
    db.commit()
    return _application_out(db, a)


@app.get("/applications", operation_id="list_my_applications", response_model=ApplicationList)
def list_my_applications(
    status: Literal["submitted", "approved", "rejected", "withdrawn"] | None = None,
    db: Session = Depends(get_db),
) -> ApplicationList:
    """Your rental applications and their status."""
    stmt = select(Application).where(Application.user_id == CURRENT_USER_ID)
    if status:
        stmt = stmt.where(Application.status == status)
    items = [_application_out(db, a) for a in db.scalars(stmt.order_by(Application.application_id))]
    return ApplicationList(items=items, total=len(items))


@app.post(
    "/applications/{application_id}/withdraw",
    operation_id="withdraw_application",
    response_model=ApplicationOut,
)
def withdraw_application(application_id: int, db: Session = Depends(get_db)) -> ApplicationOut:
    """Withdraw one of your pending applications."""
    a = db.get(Application, application_id)
    if a is None or a.user_id != CURRENT_USER_ID:
        raise HTTPException(
            404, f"Application {application_id} is not one of yours; see list_my_applications."
        )
    if a.status != "submitted":
        raise HTTPException(
            409, f"Application {application_id} is {a.status}; only pending ones can be withdrawn."
        )
    a.status = "withdrawn"
    db.commit()
    return _application_out(db, a)


# --------------------------------------------------------------------------- tools: lease and rent


@app.get("/leases", operation_id="list_my_leases", response_model=LeaseList)
def list_my_leases(db: Session = Depends(get_db)) -> LeaseList:
    """Your current and past leases."""
    rows = db.scalars(
        select(Lease).where(Lease.tenant_id == CURRENT_USER_ID).order_by(Lease.start_date.desc())
    )
    items = [_lease_out(db, x) for x in rows]
    return LeaseList(items=items, total=len(items))


@app.post("/leases/{lease_id}/notice", operation_id="give_move_out_notice", response_model=LeaseOut)
def give_move_out_notice(lease_id: int, body: NoticeIn, db: Session = Depends(get_db)) -> LeaseOut:
    """Give notice that you will move out: at least 30 days from today and no later than the lease end."""
    lease = db.get(Lease, lease_id)
    if lease is None or lease.tenant_id != CURRENT_USER_ID:
        raise HTTPException(404, f"Lease {lease_id} is not yours; see list_my_leases.")
    if lease.status != "active":
        raise HTTPException(409, f"Lease {lease_id} is {lease.status}.")
    if lease.notice_given_on:
        raise HTTPException(
            409,
            f"Notice was already given on {lease.notice_given_on} (move-out {lease.move_out_date}).",
        )
    move_out = _date(body.move_out_date, "move_out_date")
    earliest = date.fromisoformat(TODAY) + timedelta(days=NOTICE_DAYS)
    if move_out < earliest or move_out.isoformat() > lease.end_date:
        raise HTTPException(
            400,
            f"move_out_date must be between {earliest.isoformat()} ({NOTICE_DAYS} days' notice) and "
            f"the lease end {lease.end_date}.",
        )
    lease.notice_given_on = TODAY
    lease.move_out_date = move_out.isoformat()
    db.commit()
    return _lease_out(db, lease)


@app.get("/invoices", operation_id="list_rent_invoices", response_model=InvoicePage)
def list_rent_invoices(
    status: Literal["open", "paid"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> InvoicePage:
    """Your rent invoices, newest period first; open ones show the amount due now (late fee after 5 days)."""
    offset = _parse_cursor(cursor)
    stmt = select(Invoice).where(Invoice.lease_id.in_(_my_lease_ids(db)))
    if status:
        stmt = stmt.where(Invoice.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(Invoice.period.desc()).offset(offset).limit(limit))
    return InvoicePage(
        items=[_invoice_out(i) for i in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.post("/invoices/{invoice_id}/pay", operation_id="pay_rent_invoice", response_model=InvoiceOut)
def pay_rent_invoice(invoice_id: int, db: Session = Depends(get_db)) -> InvoiceOut:
    """Pay an open rent invoice in full from your bank account on file (late fee added after the grace period)."""
    inv = db.get(Invoice, invoice_id)
    if inv is None or inv.lease_id not in _my_lease_ids(db):
        raise HTTPException(
            404, f"Invoice {invoice_id} is not one of yours; see list_rent_invoices."
        )
    if inv.status != "open":
        raise HTTPException(
            409, f"Invoice {invoice_id} ({inv.period}) is already paid ({inv.paid_at})."
        )
    inv.late_fee_cents = _late_fee_now(inv)
    inv.status = "paid"
    inv.paid_at = REFERENCE_TIME
    db.commit()
    return _invoice_out(inv)


# --------------------------------------------------------------------------- tools: maintenance


@app.post("/maintenance", operation_id="submit_maintenance_request", response_model=MaintenanceOut)
def submit_maintenance_request(
    body: MaintenanceIn, db: Session = Depends(get_db)
) -> MaintenanceOut:
    """Report a problem in your current home (one unresolved request per category)."""
    lease = _active_lease(db)
    dup = db.scalar(
        select(MaintenanceRequest).where(
            MaintenanceRequest.lease_id == lease.lease_id,
            MaintenanceRequest.category == body.category,
            MaintenanceRequest.status.in_(("open", "scheduled")),
        )
    )
    if dup:
        raise HTTPException(
            409,
            f"Request {dup.request_id} ({body.category}: {dup.description!r}) is still {dup.status}; "
            "update it with update_maintenance_request instead of opening another.",
        )
    m = MaintenanceRequest(
        lease_id=lease.lease_id,
        category=body.category,
        description=body.description.strip(),
        priority=body.priority,
        entry_permitted=int(body.entry_permitted),
        status="open",
        created_at=REFERENCE_TIME,
        updated_at=REFERENCE_TIME,
    )
    db.add(m)
    db.commit()
    return _maintenance_out(m)


@app.get("/maintenance", operation_id="list_maintenance_requests", response_model=MaintenanceList)
def list_maintenance_requests(
    status: Literal["open", "scheduled", "resolved", "cancelled"] | None = None,
    db: Session = Depends(get_db),
) -> MaintenanceList:
    """Your maintenance requests, newest first."""
    stmt = select(MaintenanceRequest).where(MaintenanceRequest.lease_id.in_(_my_lease_ids(db)))
    if status:
        stmt = stmt.where(MaintenanceRequest.status == status)
    rows = db.scalars(stmt.order_by(MaintenanceRequest.created_at.desc()))
    items = [_maintenance_out(m) for m in rows]
    return MaintenanceList(items=items, total=len(items))


@app.patch(
    "/maintenance/{request_id}",
    operation_id="update_maintenance_request",
    response_model=MaintenanceOut,
)
def update_maintenance_request(
    request_id: int,
    priority: Priority | None = None,
    description: str | None = Query(default=None, min_length=5, max_length=1000),
    entry_permitted: bool | None = None,
    db: Session = Depends(get_db),
) -> MaintenanceOut:
    """Change the priority, description or entry permission of an unresolved request."""
    m = _my_request(db, request_id)
    if m.status not in ("open", "scheduled"):
        raise HTTPException(409, f"Request {request_id} is {m.status} and can no longer change.")
    if priority is None and description is None and entry_permitted is None:
        raise HTTPException(400, "Pass priority, description or entry_permitted.")
    if priority is not None:
        m.priority = priority
    if description is not None:
        m.description = description.strip()
    if entry_permitted is not None:
        m.entry_permitted = int(entry_permitted)
    m.updated_at = REFERENCE_TIME
    db.commit()
    return _maintenance_out(m)


@app.post(
    "/maintenance/{request_id}/cancel",
    operation_id="cancel_maintenance_request",
    response_model=MaintenanceOut,
)
def cancel_maintenance_request(request_id: int, db: Session = Depends(get_db)) -> MaintenanceOut:
    """Cancel an open or scheduled request you no longer need."""
    m = _my_request(db, request_id)
    if m.status not in ("open", "scheduled"):
        raise HTTPException(
            409,
            f"Request {request_id} is {m.status}; only open or scheduled requests can be cancelled.",
        )
    m.status = "cancelled"
    m.updated_at = REFERENCE_TIME
    db.commit()
    return _maintenance_out(m)
