"""Event ticketing: venues and their seat sections, events and ticket tiers, orders
with promo codes, tickets with attendee names, transfers to friends and refunds.
The logged-in customer is customer 1 (Jordan Blake).

Money is integer cents (USD). Times are ISO-8601 UTC. "Now" is REFERENCE_TIME.
Refund policy: a ticket of a refundable tier can be refunded until 7 days before
the event; every ticket of a cancelled or postponed event can be refunded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, or_, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-11-03T15:00:00Z"
CURRENT_CUSTOMER_ID = 1
REFUND_CUTOFF_DAYS = 7
MAX_PER_ORDER = 8
MAX_PAGE = 50
HELD = ("valid", "transfer_pending", "used")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

Category = Literal["concert", "sports", "theatre", "comedy"]
TicketStatus = Literal["valid", "transfer_pending", "used", "refunded"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    customer_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    created_at: Mapped[str]


class Venue(Base):
    __tablename__ = "venues"
    venue_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    city: Mapped[str]
    address: Mapped[str]


class Section(Base):
    __tablename__ = "sections"
    section_id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = mapped_column(ForeignKey("venues.venue_id"))
    code: Mapped[str]
    name: Mapped[str]
    seat_count: Mapped[int]


class Event(Base):
    __tablename__ = "events"
    event_id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = mapped_column(ForeignKey("venues.venue_id"))
    name: Mapped[str]
    performer: Mapped[str]
    category: Mapped[str]
    starts_at: Mapped[str]
    sales_start_at: Mapped[str]
    status: Mapped[str]
    max_per_customer: Mapped[int]


class Tier(Base):
    __tablename__ = "ticket_tiers"
    tier_id: Mapped[int] = mapped_column(primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.event_id"))
    section_id: Mapped[int] = mapped_column(ForeignKey("sections.section_id"))
    name: Mapped[str]
    price_cents: Mapped[int]
    quantity: Mapped[int]
    refundable: Mapped[int]


class Promo(Base):
    __tablename__ = "promo_codes"
    promo_id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str]
    event_id: Mapped[int | None] = mapped_column(ForeignKey("events.event_id"))
    percent_off: Mapped[int]
    valid_from: Mapped[str]
    valid_until: Mapped[str]
    max_uses: Mapped[int]
    used_count: Mapped[int]


class Order(Base):
    __tablename__ = "orders"
    order_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    event_id: Mapped[int] = mapped_column(ForeignKey("events.event_id"))
    promo_id: Mapped[int | None] = mapped_column(ForeignKey("promo_codes.promo_id"))
    status: Mapped[str]
    subtotal_cents: Mapped[int]
    discount_cents: Mapped[int]
    total_cents: Mapped[int]
    created_at: Mapped[str]


class Ticket(Base):
    __tablename__ = "tickets"
    ticket_id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    tier_id: Mapped[int] = mapped_column(ForeignKey("ticket_tiers.tier_id"))
    holder_customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    seat_label: Mapped[str]
    price_paid_cents: Mapped[int]
    attendee_name: Mapped[str | None]
    status: Mapped[str]
    barcode: Mapped[str]


class Transfer(Base):
    __tablename__ = "transfers"
    transfer_id: Mapped[int] = mapped_column(primary_key=True)
    ticket_id: Mapped[int] = mapped_column(ForeignKey("tickets.ticket_id"))
    from_customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    to_email: Mapped[str]
    to_customer_id: Mapped[int | None] = mapped_column(ForeignKey("customers.customer_id"))
    status: Mapped[str]
    created_at: Mapped[str]
    resolved_at: Mapped[str | None]


class Refund(Base):
    __tablename__ = "refunds"
    refund_id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    ticket_id: Mapped[int] = mapped_column(ForeignKey("tickets.ticket_id"))
    amount_cents: Mapped[int]
    reason: Mapped[str]
    created_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only for serving the app on its own; the awm runtime overrides get_db.
    return create_engine(f"sqlite:///{os.environ.get('TICKETS_DB', 'tickets.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Tickets",
    description="Event tickets for the logged-in customer (customer 1). Amounts are integer cents.",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"


class ProfileOut(BaseModel):
    customer_id: int
    name: str
    email: str
    customer_since: str


class SectionOut(BaseModel):
    section_id: int
    code: str
    name: str
    seat_count: int


class VenueOut(BaseModel):
    venue_id: int
    name: str
    city: str
    address: str


class VenueList(BaseModel):
    items: list[VenueOut]
    total: int


class EventOut(BaseModel):
    event_id: int
    name: str
    performer: str
    category: str
    venue_id: int
    venue_name: str
    city: str
    starts_at: str
    status: str
    on_sale: bool
    tickets_available: int
    lowest_available_price_cents: int | None
    max_per_customer: int


class EventPage(BaseModel):
    items: list[EventOut]
    total: int
    next_cursor: str | None


class TierOut(BaseModel):
    tier_id: int
    section_code: str
    section_name: str
    name: str
    price_cents: int
    available: int
    sold_out: bool
    refundable: bool


class EventDetailOut(EventOut):
    sales_start_at: str
    refund_deadline: str
    tiers: list[TierOut]


class VenueDetailOut(VenueOut):
    sections: list[SectionOut]
    upcoming_events: list[EventOut]


class PromoCheckOut(BaseModel):
    code: str
    event_id: int
    percent_off: int
    valid: bool
    reason: str


class BuyIn(BaseModel):
    event_id: int
    tier_id: int
    quantity: int = Field(ge=1, le=MAX_PER_ORDER)
    promo_code: str | None = Field(default=None, description="Optional promo code")


class TicketOut(BaseModel):
    ticket_id: int
    order_id: int
    event_id: int
    event_name: str
    city: str
    starts_at: str
    event_status: str
    tier_id: int
    section: str
    seat_label: str
    price_paid_cents: int
    attendee_name: str | None
    status: str
    barcode: str | None
    refundable: bool
    refund_deadline: str


class TicketPage(BaseModel):
    items: list[TicketOut]
    total: int
    next_cursor: str | None


class OrderTicketOut(BaseModel):
    ticket_id: int
    seat_label: str
    price_paid_cents: int
    status: str


class OrderOut(BaseModel):
    order_id: int
    event_id: int
    event_name: str
    starts_at: str
    status: str
    promo_code: str | None
    subtotal_cents: int
    discount_cents: int
    total_cents: int
    refunded_cents: int
    created_at: str
    tickets: list[OrderTicketOut]


class OrderPage(BaseModel):
    items: list[OrderOut]
    total: int
    next_cursor: str | None


class AttendeeIn(BaseModel):
    attendee_name: str = Field(min_length=1, max_length=80)


class TransferIn(BaseModel):
    ticket_id: int
    to_email: str = Field(description="Email address of the person receiving the ticket")


class TransferOut(BaseModel):
    transfer_id: int
    ticket_id: int
    event_name: str
    seat_label: str
    direction: str
    from_name: str
    to_email: str
    status: str
    created_at: str
    resolved_at: str | None


class TransferList(BaseModel):
    items: list[TransferOut]
    total: int


class RefundIn(BaseModel):
    ticket_id: int
    reason: str = Field(min_length=3, max_length=300)


class RefundOut(BaseModel):
    refund_id: int
    order_id: int
    ticket_id: int
    event_name: str
    amount_cents: int
    reason: str
    created_at: str


class RefundList(BaseModel):
    items: list[RefundOut]
    total: int
    total_refunded_cents: int


class UpcomingOut(BaseModel):
    event_id: int
    event_name: str
    city: str
    starts_at: str
    event_status: str
    tickets_held: int


class UpcomingList(BaseModel):
    items: list[UpcomingOut]
    total: int


# --------------------------------------------------------------------------- helpers


def _ts(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> datetime:
    return _ts(REFERENCE_TIME)


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


def _date_bound(value: str | None, name: str, end: bool) -> str | None:
    if value is None:
        return None
    try:
        day = datetime.strptime(value.strip()[:10], "%Y-%m-%d")
    except ValueError as exc:
        raise HTTPException(400, f"{name} must be a date YYYY-MM-DD, got {value!r}.") from exc
    return _iso(day + timedelta(days=1) if end else day)


def _me(db: Session) -> Customer:
    return db.get(Customer, CURRENT_CUSTOMER_ID)


def _sold(db: Session, tier_id: int) -> int:
    return (
        db.scalar(
            select(func.count())
            .select_from(Ticket)
            .where(Ticket.tier_id == tier_id, Ticket.status != "refunded")
        )
        or 0
    )


def _refund_deadline(e: Event) -> str:
    return _iso(_ts(e.starts_at) - timedelta(days=REFUND_CUTOFF_DAYS))


def _on_sale(e: Event) -> bool:
    return e.status == "scheduled" and e.sales_start_at <= REFERENCE_TIME < e.starts_at


def _tiers(db: Session, event_id: int) -> list[TierOut]:
    out = []
    for t in db.scalars(select(Tier).where(Tier.event_id == event_id).order_by(Tier.tier_id)):
        s = db.get(Section, t.section_id)
        left = max(0, t.quantity - _sold(db, t.tier_id))
        out.append(
            TierOut(
                tier_id=t.tier_id,
                section_code=s.code,
                section_name=s.name,
                name=t.name,
                price_cents=t.price_cents,
                available=left,
                sold_out=left == 0,
                refundable=bool(t.refundable),
            )
        )
    return out


def _event_out(db: Session, e: Event) -> EventOut:
    v = db.get(Venue, e.venue_id)
    tiers = _tiers(db, e.event_id)
    open_tiers = [t for t in tiers if t.available > 0]
    return EventOut(
        event_id=e.event_id,
        name=e.name,
        performer=e.performer,
        category=e.category,
        venue_id=v.venue_id,
        venue_name=v.name,
        city=v.city,
        starts_at=e.starts_at,
        status=e.status,
        on_sale=_on_sale(e),
        tickets_available=sum(t.available for t in tiers),
        lowest_available_price_cents=min((t.price_cents for t in open_tiers), default=None),
        max_per_customer=e.max_per_customer,
    )


def _event(db: Session, event_id: int) -> Event:
    e = db.get(Event, event_id)
    if e is None:
        raise HTTPException(404, f"Event {event_id} not found; find events with search_events.")
    return e


def _ticket_parts(db: Session, t: Ticket) -> tuple[Tier, Event, Section, Venue]:
    tier = db.get(Tier, t.tier_id)
    e = db.get(Event, tier.event_id)
    return tier, e, db.get(Section, tier.section_id), db.get(Venue, e.venue_id)


def _refundable(db: Session, t: Ticket) -> bool:
    tier, e, _, _ = _ticket_parts(db, t)
    order = db.get(Order, t.order_id)
    if t.status != "valid" or order.customer_id != CURRENT_CUSTOMER_ID:
        return False
    if e.status in ("cancelled", "postponed"):
        return True
    return bool(tier.refundable) and REFERENCE_TIME <= _refund_deadline(e)


def _ticket_out(db: Session, t: Ticket) -> TicketOut:
    tier, e, s, v = _ticket_parts(db, t)
    return TicketOut(
        ticket_id=t.ticket_id,
        order_id=t.order_id,
        event_id=e.event_id,
        event_name=e.name,
        city=v.city,
        starts_at=e.starts_at,
        event_status=e.status,
        tier_id=tier.tier_id,
        section=f"{s.code} {s.name}",
        seat_label=t.seat_label,
        price_paid_cents=t.price_paid_cents,
        attendee_name=t.attendee_name,
        status=t.status,
        barcode=t.barcode if t.status == "valid" else None,
        refundable=_refundable(db, t),
        refund_deadline=_refund_deadline(e),
    )


def _my_ticket(db: Session, ticket_id: int) -> Ticket:
    t = db.get(Ticket, ticket_id)
    if t is None or t.holder_customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(
            404, f"Ticket {ticket_id} is not one of your tickets; use list_my_tickets."
        )
    return t


def _order_out(db: Session, o: Order) -> OrderOut:
    e = db.get(Event, o.event_id)
    promo = db.get(Promo, o.promo_id) if o.promo_id else None
    tickets = []
    for t in db.scalars(
        select(Ticket).where(Ticket.order_id == o.order_id).order_by(Ticket.ticket_id)
    ):
        # a ticket given away belongs to its new holder now: show only that it was transferred
        status = t.status if t.holder_customer_id == CURRENT_CUSTOMER_ID else "transferred"
        tickets.append(
            OrderTicketOut(
                ticket_id=t.ticket_id,
                seat_label=t.seat_label,
                price_paid_cents=t.price_paid_cents,
                status=status,
            )
        )
    refunded = db.scalar(
        select(func.coalesce(func.sum(Refund.amount_cents), 0)).where(Refund.order_id == o.order_id)
    )
    return OrderOut(
        order_id=o.order_id,
        event_id=e.event_id,
        event_name=e.name,
        starts_at=e.starts_at,
        status=o.status,
        promo_code=promo.code if promo else None,
        subtotal_cents=o.subtotal_cents,
        discount_cents=o.discount_cents,
        total_cents=o.total_cents,
        refunded_cents=refunded,
        created_at=o.created_at,
        tickets=tickets,
    )


def _my_order(db: Session, order_id: int) -> Order:
    o = db.get(Order, order_id)
    if o is None or o.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(404, f"Order {order_id} is not one of your orders; use list_my_orders.")
    return o


def _promo_problem(p: Promo, event_id: int) -> str | None:
    if p.event_id is not None and p.event_id != event_id:
        return f"code {p.code} is only valid for event {p.event_id}"
    if REFERENCE_TIME < p.valid_from:
        return f"code {p.code} is not valid before {p.valid_from}"
    if REFERENCE_TIME > p.valid_until:
        return f"code {p.code} expired on {p.valid_until}"
    if p.used_count >= p.max_uses:
        return f"code {p.code} has reached its limit of {p.max_uses} uses"
    return None


def _find_promo(db: Session, code: str) -> Promo:
    p = db.scalar(select(Promo).where(func.upper(Promo.code) == code.strip().upper()))
    if p is None:
        raise HTTPException(404, f"Promo code {code!r} does not exist; check the spelling.")
    return p


def _refund_ticket(db: Session, t: Ticket, reason: str) -> Refund:
    tier, e, _, _ = _ticket_parts(db, t)
    order = db.get(Order, t.order_id)
    if order.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(
            403,
            f"Ticket {t.ticket_id} was bought by someone else and transferred to you; only the buyer "
            "can refund it. You can transfer it onward with transfer_ticket.",
        )
    if t.status != "valid":
        hint = " (cancel the pending transfer first)" if t.status == "transfer_pending" else ""
        raise HTTPException(
            409, f"Ticket {t.ticket_id} is {t.status}; only valid tickets can be refunded{hint}."
        )
    if e.status == "scheduled":
        if e.starts_at <= REFERENCE_TIME:
            raise HTTPException(409, f"{e.name} already took place on {e.starts_at}; no refunds.")
        if not tier.refundable:
            raise HTTPException(
                409,
                f"Ticket {t.ticket_id} ({tier.name}, {e.name}) is non-refundable; you can transfer it "
                "with transfer_ticket instead.",
            )
        if REFERENCE_TIME > _refund_deadline(e):
            raise HTTPException(
                409,
                f"Refunds for {e.name} closed on {_refund_deadline(e)} ({REFUND_CUTOFF_DAYS} days "
                f"before the event on {e.starts_at}); you can transfer the ticket with transfer_ticket instead.",
            )
    t.status = "refunded"
    r = Refund(
        order_id=order.order_id,
        ticket_id=t.ticket_id,
        amount_cents=t.price_paid_cents,
        reason=reason.strip(),
        created_at=REFERENCE_TIME,
    )
    db.add(r)
    db.flush()
    statuses = list(db.scalars(select(Ticket.status).where(Ticket.order_id == order.order_id)))
    order.status = "refunded" if all(s == "refunded" for s in statuses) else "partially_refunded"
    return r


def _refund_out(db: Session, r: Refund) -> RefundOut:
    o = db.get(Order, r.order_id)
    return RefundOut(
        refund_id=r.refund_id,
        order_id=r.order_id,
        ticket_id=r.ticket_id,
        event_name=db.get(Event, o.event_id).name,
        amount_cents=r.amount_cents,
        reason=r.reason,
        created_at=r.created_at,
    )


def _transfer_out(db: Session, tr: Transfer) -> TransferOut:
    t = db.get(Ticket, tr.ticket_id)
    _, e, _, _ = _ticket_parts(db, t)
    return TransferOut(
        transfer_id=tr.transfer_id,
        ticket_id=tr.ticket_id,
        event_name=e.name,
        seat_label=t.seat_label,
        direction="outgoing" if tr.from_customer_id == CURRENT_CUSTOMER_ID else "incoming",
        from_name=db.get(Customer, tr.from_customer_id).name,
        to_email=tr.to_email,
        status=tr.status,
        created_at=tr.created_at,
        resolved_at=tr.resolved_at,
    )


def _incoming_clause(db: Session):
    return or_(
        Transfer.to_customer_id == CURRENT_CUSTOMER_ID,
        func.lower(Transfer.to_email) == _me(db).email.lower(),
    )


# --------------------------------------------------------------------------- tools: time, profile, venues, events


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC); refund deadlines and sales windows are compared with it."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """The logged-in customer's profile."""
    c = _me(db)
    return ProfileOut(
        customer_id=c.customer_id, name=c.name, email=c.email, customer_since=c.created_at
    )


@app.get("/venues", operation_id="list_venues", response_model=VenueList)
def list_venues(
    city: str | None = Query(default=None, description="Only venues in this city"),
    db: Session = Depends(get_db),
) -> VenueList:
    """Venues, optionally in one city."""
    stmt = select(Venue)
    if city:
        stmt = stmt.where(func.lower(Venue.city) == city.strip().lower())
    items = [
        VenueOut(venue_id=v.venue_id, name=v.name, city=v.city, address=v.address)
        for v in db.scalars(stmt.order_by(Venue.venue_id))
    ]
    return VenueList(items=items, total=len(items))


@app.get("/venues/{venue_id}", operation_id="get_venue", response_model=VenueDetailOut)
def get_venue(venue_id: int, db: Session = Depends(get_db)) -> VenueDetailOut:
    """A venue with its seat sections and its upcoming events."""
    v = db.get(Venue, venue_id)
    if v is None:
        raise HTTPException(404, f"Venue {venue_id} not found; see list_venues.")
    sections = db.scalars(
        select(Section).where(Section.venue_id == venue_id).order_by(Section.section_id)
    )
    events = db.scalars(
        select(Event)
        .where(Event.venue_id == venue_id, Event.starts_at > REFERENCE_TIME)
        .order_by(Event.starts_at)
    )
    return VenueDetailOut(
        venue_id=v.venue_id,
        name=v.name,
        city=v.city,
        address=v.address,
        sections=[
            SectionOut(section_id=s.section_id, code=s.code, name=s.name, seat_count=s.seat_count)
            for s in sections
        ],
        upcoming_events=[_event_out(db, e) for e in events],
    )


@app.get("/events", operation_id="search_events", response_model=EventPage)
def search_events(
    query: str | None = Query(default=None, description="Words in the event or performer name"),
    city: str | None = None,
    category: Category | None = None,
    date_from: str | None = Query(default=None, description="Inclusive, YYYY-MM-DD"),
    date_to: str | None = Query(default=None, description="Inclusive, YYYY-MM-DD"),
    include_past: bool = False,
    limit: int = Query(default=5, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> EventPage:
    """Search events (upcoming by default), soonest first; paginated (pass next_cursor for more)."""
    offset = _parse_cursor(cursor)
    stmt = select(Event).join(Venue, Venue.venue_id == Event.venue_id)
    if not include_past:
        stmt = stmt.where(Event.starts_at > REFERENCE_TIME)
    if query:
        q = f"%{query.strip().lower()}%"
        stmt = stmt.where(or_(func.lower(Event.name).like(q), func.lower(Event.performer).like(q)))
    if city:
        stmt = stmt.where(func.lower(Venue.city) == city.strip().lower())
    if category:
        stmt = stmt.where(Event.category == category)
    lo, hi = _date_bound(date_from, "date_from", False), _date_bound(date_to, "date_to", True)
    if lo:
        stmt = stmt.where(Event.starts_at >= lo)
    if hi:
        stmt = stmt.where(Event.starts_at < hi)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(Event.starts_at, Event.event_id).offset(offset).limit(limit))
    return EventPage(
        items=[_event_out(db, e) for e in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/events/{event_id}", operation_id="get_event", response_model=EventDetailOut)
def get_event(event_id: int, db: Session = Depends(get_db)) -> EventDetailOut:
    """One event with its ticket tiers (price, seats available, refundable) and refund deadline."""
    e = _event(db, event_id)
    return EventDetailOut(
        **_event_out(db, e).model_dump(),
        sales_start_at=e.sales_start_at,
        refund_deadline=_refund_deadline(e),
        tiers=_tiers(db, event_id),
    )


@app.get("/promo-codes/{code}", operation_id="check_promo_code", response_model=PromoCheckOut)
def check_promo_code(code: str, event_id: int, db: Session = Depends(get_db)) -> PromoCheckOut:
    """Whether a promo code can be used for an event right now, and its discount."""
    _event(db, event_id)
    p = _find_promo(db, code)
    problem = _promo_problem(p, event_id)
    return PromoCheckOut(
        code=p.code,
        event_id=event_id,
        percent_off=p.percent_off,
        valid=problem is None,
        reason=problem or f"{p.percent_off}% off every ticket in the order",
    )


# --------------------------------------------------------------------------- tools: buying and orders


@app.post("/orders", operation_id="buy_tickets", response_model=OrderOut)
def buy_tickets(body: BuyIn, db: Session = Depends(get_db)) -> OrderOut:
    """Buy tickets in one tier of an event (paid at once with your saved card); optional promo code."""
    e = _event(db, body.event_id)
    tier = db.get(Tier, body.tier_id)
    if tier is None or tier.event_id != e.event_id:
        ids = [t.tier_id for t in _tiers(db, e.event_id)]
        raise HTTPException(
            404, f"Tier {body.tier_id} is not a tier of event {e.event_id}; its tiers: {ids}."
        )
    if e.status != "scheduled":
        raise HTTPException(409, f"{e.name} is {e.status}; tickets are not on sale.")
    if e.starts_at <= REFERENCE_TIME:
        raise HTTPException(409, f"{e.name} started at {e.starts_at}; tickets are no longer sold.")
    if e.sales_start_at > REFERENCE_TIME:
        raise HTTPException(409, f"Sales for {e.name} open at {e.sales_start_at}.")
    left = tier.quantity - _sold(db, tier.tier_id)
    if left <= 0:
        others = [
            f"{t.tier_id} ({t.name}, {t.available} left)"
            for t in _tiers(db, e.event_id)
            if t.available
        ]
        raise HTTPException(
            409,
            f"Tier {tier.tier_id} ({tier.name}) is sold out; tiers with seats: {others or 'none'}.",
        )
    if body.quantity > left:
        raise HTTPException(
            409, f"Only {left} tickets are left in tier {tier.tier_id} ({tier.name})."
        )
    mine = (
        db.scalar(
            select(func.count())
            .select_from(Ticket)
            .join(Order, Order.order_id == Ticket.order_id)
            .join(Tier, Tier.tier_id == Ticket.tier_id)
            .where(
                Order.customer_id == CURRENT_CUSTOMER_ID,
                Tier.event_id == e.event_id,
                Ticket.status != "refunded",
            )
        )
        or 0
    )
    if mine + body.quantity > e.max_per_customer:
        raise HTTPException(
            409,
            f"{e.name} allows {e.max_per_customer} tickets per customer; you already bought {mine}, "
            f"so you can buy at most {max(0, e.max_per_customer - mine)} more.",
        )
    promo = None
    if body.promo_code:
        promo = _find_promo(db, body.promo_code)
        problem = _promo_problem(promo, e.event_id)
        if problem:
            raise HTTPException(
                409, f"Promo code not applied: {problem}. Retry without it or with another code."
            )
        promo.used_count += 1
    subtotal = tier.price_cents * body.quantity
    discount = subtotal * promo.percent_off // 100 if promo else 0
    order = Order(
        customer_id=CURRENT_CUSTOMER_ID,
        event_id=e.event_id,
        promo_id=promo.promo_id if promo else None,
        status="paid",
        subtotal_cents=subtotal,
        discount_cents=discount,
        total_cents=subtotal - discount,
        created_at=REFERENCE_TIME,
    )
    db.add(order)
    db.flush()
    code = db.get(Section, tier.section_id).code
    issued = (
        db.scalar(select(func.count()).select_from(Ticket).where(Ticket.tier_id == tier.tier_id))
        or 0
    )
    for k in range(1, body.quantity + 1):
        n = issued + k
        t = Ticket(
            order_id=order.order_id,
            tier_id=tier.tier_id,
            holder_customer_id=CURRENT_CUSTOMER_ID,
            seat_label=f"{code} Row {chr(ord('A') + (n - 1) // 10)} Seat {(n - 1) % 10 + 1}",
            price_paid_cents=(subtotal - discount) // body.quantity,
            attendee_name=None,
            status="valid",
            barcode="",
        )
        db.add(t)
        db.flush()
        t.barcode = f"TX{t.ticket_id:05d}{(t.ticket_id * 7919) % 10000:04d}"
    db.commit()
    return _order_out(db, order)


@app.get("/orders", operation_id="list_my_orders", response_model=OrderPage)
def list_my_orders(
    status: Literal["paid", "partially_refunded", "refunded"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> OrderPage:
    """Your orders, newest first; paginated."""
    offset = _parse_cursor(cursor)
    stmt = select(Order).where(Order.customer_id == CURRENT_CUSTOMER_ID)
    if status:
        stmt = stmt.where(Order.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Order.created_at.desc(), Order.order_id.desc()).offset(offset).limit(limit)
    )
    return OrderPage(
        items=[_order_out(db, o) for o in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/orders/{order_id}", operation_id="get_order", response_model=OrderOut)
def get_order(order_id: int, db: Session = Depends(get_db)) -> OrderOut:
    """One of your orders with its tickets and refunds."""
    return _order_out(db, _my_order(db, order_id))


@app.post("/orders/{order_id}/cancel", operation_id="cancel_order", response_model=RefundList)
def cancel_order(order_id: int, db: Session = Depends(get_db)) -> RefundList:
    """Refund every valid ticket you still hold in an order (all must be refundable, or nothing happens)."""
    o = _my_order(db, order_id)
    tickets = list(
        db.scalars(
            select(Ticket)
            .where(
                Ticket.order_id == o.order_id,
                Ticket.holder_customer_id == CURRENT_CUSTOMER_ID,
                Ticket.status == "valid",
            )
            .order_by(Ticket.ticket_id)
        )
    )
    if not tickets:
        raise HTTPException(
            409, f"Order {order_id} has no valid tickets left to refund (status {o.status})."
        )
    refunds = [_refund_ticket(db, t, "Order cancelled") for t in tickets]
    db.commit()
    items = [_refund_out(db, r) for r in refunds]
    return RefundList(
        items=items, total=len(items), total_refunded_cents=sum(r.amount_cents for r in items)
    )


# --------------------------------------------------------------------------- tools: tickets


@app.get("/tickets", operation_id="list_my_tickets", response_model=TicketPage)
def list_my_tickets(
    event_id: int | None = None,
    status: TicketStatus | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> TicketPage:
    """Tickets you hold (bought or received), by event date; paginated. Each says whether it can be refunded now."""
    offset = _parse_cursor(cursor)
    stmt = (
        select(Ticket)
        .join(Tier, Tier.tier_id == Ticket.tier_id)
        .join(Event, Event.event_id == Tier.event_id)
        .where(Ticket.holder_customer_id == CURRENT_CUSTOMER_ID)
    )
    if event_id is not None:
        stmt = stmt.where(Tier.event_id == event_id)
    if status:
        stmt = stmt.where(Ticket.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(Event.starts_at, Ticket.ticket_id).offset(offset).limit(limit))
    return TicketPage(
        items=[_ticket_out(db, t) for t in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/tickets/{ticket_id}", operation_id="get_ticket", response_model=TicketOut)
def get_ticket(ticket_id: int, db: Session = Depends(get_db)) -> TicketOut:
    """One of your tickets."""
    return _ticket_out(db, _my_ticket(db, ticket_id))


@app.get("/me/upcoming", operation_id="list_my_upcoming_events", response_model=UpcomingList)
def list_my_upcoming_events(db: Session = Depends(get_db)) -> UpcomingList:
    """Upcoming events you hold valid or pending-transfer tickets for, soonest first."""
    rows = db.execute(
        select(Event, func.count())
        .join(Tier, Tier.event_id == Event.event_id)
        .join(Ticket, Ticket.tier_id == Tier.tier_id)
        .where(
            Ticket.holder_customer_id == CURRENT_CUSTOMER_ID,
            Ticket.status.in_(("valid", "transfer_pending")),
            Event.starts_at > REFERENCE_TIME,
        )
        .group_by(Event.event_id)
        .order_by(Event.starts_at)
    ).all()
    items = [
        UpcomingOut(
            event_id=e.event_id,
            event_name=e.name,
            city=db.get(Venue, e.venue_id).city,
            starts_at=e.starts_at,
            event_status=e.status,
            tickets_held=n,
        )
        for e, n in rows
    ]
    return UpcomingList(items=items, total=len(items))


@app.put(
    "/tickets/{ticket_id}/attendee", operation_id="set_attendee_name", response_model=TicketOut
)
def set_attendee_name(ticket_id: int, body: AttendeeIn, db: Session = Depends(get_db)) -> TicketOut:
    """Put the name of the person who will use the ticket on it (valid tickets of upcoming events)."""
    t = _my_ticket(db, ticket_id)
    _, e, _, _ = _ticket_parts(db, t)
    if t.status != "valid":
        raise HTTPException(
            409, f"Ticket {ticket_id} is {t.status}; only valid tickets can be renamed."
        )
    if e.starts_at <= REFERENCE_TIME:
        raise HTTPException(409, f"{e.name} already took place.")
    t.attendee_name = body.attendee_name.strip()
    db.commit()
    return _ticket_out(db, t)


# --------------------------------------------------------------------------- tools: transfers


@app.post("/transfers", operation_id="transfer_ticket", response_model=TransferOut)
def transfer_ticket(body: TransferIn, db: Session = Depends(get_db)) -> TransferOut:
    """Offer one of your valid tickets to someone by email; it stays pending until they accept."""
    t = _my_ticket(db, body.ticket_id)
    _, e, _, _ = _ticket_parts(db, t)
    email = body.to_email.strip().lower()
    if not EMAIL_RE.match(email):
        raise HTTPException(400, f"{body.to_email!r} is not an email address.")
    if email == _me(db).email.lower():
        raise HTTPException(400, "You cannot transfer a ticket to yourself.")
    if t.status != "valid":
        raise HTTPException(
            409, f"Ticket {t.ticket_id} is {t.status}; only valid tickets can be transferred."
        )
    if e.status == "cancelled":
        raise HTTPException(
            409, f"{e.name} is cancelled; refund the ticket with request_refund instead."
        )
    if e.starts_at <= REFERENCE_TIME:
        raise HTTPException(409, f"{e.name} already took place.")
    recipient = db.scalar(select(Customer).where(func.lower(Customer.email) == email))
    tr = Transfer(
        ticket_id=t.ticket_id,
        from_customer_id=CURRENT_CUSTOMER_ID,
        to_email=email,
        to_customer_id=recipient.customer_id if recipient else None,
        status="pending",
        created_at=REFERENCE_TIME,
    )
    t.status = "transfer_pending"
    db.add(tr)
    db.commit()
    return _transfer_out(db, tr)


@app.get("/transfers", operation_id="list_my_transfers", response_model=TransferList)
def list_my_transfers(
    direction: Literal["incoming", "outgoing", "all"] = "all",
    status: Literal["pending", "accepted", "cancelled"] | None = None,
    db: Session = Depends(get_db),
) -> TransferList:
    """Ticket transfers you sent (outgoing) or that were sent to you (incoming)."""
    clauses = []
    if direction in ("outgoing", "all"):
        clauses.append(Transfer.from_customer_id == CURRENT_CUSTOMER_ID)
    if direction in ("incoming", "all"):
        clauses.append(_incoming_clause(db))
    stmt = select(Transfer).where(or_(*clauses))
    if status:
        stmt = stmt.where(Transfer.status == status)
    items = [_transfer_out(db, tr) for tr in db.scalars(stmt.order_by(Transfer.transfer_id))]
    return TransferList(items=items, total=len(items))


@app.post(
    "/transfers/{transfer_id}/cancel", operation_id="cancel_transfer", response_model=TransferOut
)
def cancel_transfer(transfer_id: int, db: Session = Depends(get_db)) -> TransferOut:
    """Take back a pending transfer you sent; the ticket becomes valid for you again."""
    tr = db.get(Transfer, transfer_id)
    if tr is None or tr.from_customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(
            404,
            f"Transfer {transfer_id} is not one you sent; see list_my_transfers(direction='outgoing').",
        )
    if tr.status != "pending":
        raise HTTPException(
            409, f"Transfer {transfer_id} is {tr.status}; only pending transfers can be cancelled."
        )
    tr.status = "cancelled"
    tr.resolved_at = REFERENCE_TIME
    db.get(Ticket, tr.ticket_id).status = "valid"
    db.commit()
    return _transfer_out(db, tr)


@app.post(
    "/transfers/{transfer_id}/accept", operation_id="accept_transfer", response_model=TransferOut
)
def accept_transfer(transfer_id: int, db: Session = Depends(get_db)) -> TransferOut:
    """Accept a ticket someone sent you; it becomes yours."""
    tr = db.scalar(
        select(Transfer).where(Transfer.transfer_id == transfer_id, _incoming_clause(db))
    )
    if tr is None:
        raise HTTPException(
            404,
            f"Transfer {transfer_id} was not sent to you; see list_my_transfers(direction='incoming').",
        )
    if tr.status != "pending":
        raise HTTPException(
            409, f"Transfer {transfer_id} is {tr.status}; only pending transfers can be accepted."
        )
    t = db.get(Ticket, tr.ticket_id)
    tr.status = "accepted"
    tr.to_customer_id = CURRENT_CUSTOMER_ID
    tr.resolved_at = REFERENCE_TIME
    t.holder_customer_id = CURRENT_CUSTOMER_ID
    t.status = "valid"
    t.attendee_name = None
    db.commit()
    return _transfer_out(db, tr)


# --------------------------------------------------------------------------- tools: refunds


@app.post("/refunds", operation_id="request_refund", response_model=RefundOut)
def request_refund(body: RefundIn, db: Session = Depends(get_db)) -> RefundOut:
    """Refund one ticket you bought: refundable tiers until 7 days before the event; any ticket of a
    cancelled or postponed event. The price paid goes back to your card."""
    t = _my_ticket(db, body.ticket_id)
    r = _refund_ticket(db, t, body.reason)
    db.commit()
    return _refund_out(db, r)


@app.get("/refunds", operation_id="list_my_refunds", response_model=RefundList)
def list_my_refunds(db: Session = Depends(get_db)) -> RefundList:
    """Refunds on your orders."""
    rows = db.scalars(
        select(Refund)
        .join(Order, Order.order_id == Refund.order_id)
        .where(Order.customer_id == CURRENT_CUSTOMER_ID)
        .order_by(Refund.refund_id)
    )
    items = [_refund_out(db, r) for r in rows]
    return RefundList(
        items=items, total=len(items), total_refunded_cents=sum(r.amount_cents for r in items)
    )
