"""Food delivery: find restaurants that deliver to you and are open, build a cart,
order with promo codes and tips, cancel, reorder, rate and keep favourites.
The logged-in customer is customer 1 (Elena Sokolova).

Money is integer cents (USD). Times are ISO-8601 UTC; opening hours are HH:MM UTC.
"Now" is REFERENCE_TIME.
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

REFERENCE_TIME = "2025-10-10T18:30:00Z"
CURRENT_CUSTOMER_ID = 1
REVIEW_WINDOW_DAYS = 14
MAX_PAGE = 50
ZONES = ("center", "north", "east", "south")


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    customer_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]
    created_at: Mapped[str]


class Address(Base):
    __tablename__ = "addresses"
    address_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    label: Mapped[str]
    line1: Mapped[str]
    zone: Mapped[str]
    is_default: Mapped[int]


class Restaurant(Base):
    __tablename__ = "restaurants"
    restaurant_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    cuisine: Mapped[str]
    delivery_zones: Mapped[str]
    opens_at: Mapped[str]
    closes_at: Mapped[str]
    is_open: Mapped[int]
    min_order_cents: Mapped[int]
    delivery_fee_cents: Mapped[int]
    rating: Mapped[float]


class MenuItem(Base):
    __tablename__ = "menu_items"
    item_id: Mapped[int] = mapped_column(primary_key=True)
    restaurant_id: Mapped[int] = mapped_column(ForeignKey("restaurants.restaurant_id"))
    name: Mapped[str]
    category: Mapped[str]
    price_cents: Mapped[int]
    is_vegetarian: Mapped[int]
    is_available: Mapped[int]


class Courier(Base):
    __tablename__ = "couriers"
    courier_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    vehicle: Mapped[str]
    rating: Mapped[float]


class Promo(Base):
    __tablename__ = "promo_codes"
    promo_id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str]
    percent_off: Mapped[int]
    max_discount_cents: Mapped[int]
    min_subtotal_cents: Mapped[int]
    valid_from: Mapped[str]
    valid_until: Mapped[str]
    restaurant_id: Mapped[int | None] = mapped_column(ForeignKey("restaurants.restaurant_id"))
    max_uses_per_customer: Mapped[int]
    is_active: Mapped[int]


class Order(Base):
    __tablename__ = "orders"
    order_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    restaurant_id: Mapped[int] = mapped_column(ForeignKey("restaurants.restaurant_id"))
    address_id: Mapped[int] = mapped_column(ForeignKey("addresses.address_id"))
    courier_id: Mapped[int | None] = mapped_column(ForeignKey("couriers.courier_id"))
    promo_id: Mapped[int | None] = mapped_column(ForeignKey("promo_codes.promo_id"))
    status: Mapped[str]
    subtotal_cents: Mapped[int]
    delivery_fee_cents: Mapped[int]
    discount_cents: Mapped[int]
    tip_cents: Mapped[int]
    total_cents: Mapped[int]
    placed_at: Mapped[str]
    delivered_at: Mapped[str | None]
    cancelled_at: Mapped[str | None]


class OrderItem(Base):
    __tablename__ = "order_items"
    order_item_id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    item_id: Mapped[int] = mapped_column(ForeignKey("menu_items.item_id"))
    quantity: Mapped[int]
    unit_price_cents: Mapped[int]


class Review(Base):
    __tablename__ = "reviews"
    review_id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    restaurant_rating: Mapped[int]
    courier_rating: Mapped[int | None]
    comment: Mapped[str]
    created_at: Mapped[str]


class CartItem(Base):
    __tablename__ = "cart_items"
    cart_item_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    item_id: Mapped[int] = mapped_column(ForeignKey("menu_items.item_id"))
    quantity: Mapped[int]
    note: Mapped[str]
    added_at: Mapped[str]


class Favorite(Base):
    __tablename__ = "favorites"
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"), primary_key=True)
    restaurant_id: Mapped[int] = mapped_column(
        ForeignKey("restaurants.restaurant_id"), primary_key=True
    )
    added_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('FOOD_DB', 'food.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Food delivery",
    description="Food delivery for the logged-in customer (customer 1). Amounts are integer cents (USD).",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"


class ProfileOut(BaseModel):
    customer_id: int
    name: str
    email: str
    phone: str
    member_since: str


class AddressOut(BaseModel):
    address_id: int
    label: str
    line1: str
    zone: str
    is_default: bool


class AddressList(BaseModel):
    items: list[AddressOut]
    total: int


class AddressIn(BaseModel):
    label: str = Field(min_length=1, max_length=40)
    line1: str = Field(min_length=3, max_length=120)
    zone: Literal["center", "north", "east", "south"]


class RestaurantOut(BaseModel):
    restaurant_id: int
    name: str
    cuisine: str
    delivery_zones: list[str]
    opens_at: str
    closes_at: str
    open_now: bool
    closed_reason: str | None
    min_order_cents: int
    delivery_fee_cents: int
    rating: float


class RestaurantPage(BaseModel):
    items: list[RestaurantOut]
    total: int
    next_cursor: str | None


class MenuItemOut(BaseModel):
    item_id: int
    restaurant_id: int
    restaurant_name: str
    name: str
    category: str
    price_cents: int
    is_vegetarian: bool
    is_available: bool


class MenuItemPage(BaseModel):
    items: list[MenuItemOut]
    total: int
    next_cursor: str | None


class RestaurantDetailOut(RestaurantOut):
    menu: list[MenuItemOut]


class CartLineOut(BaseModel):
    item_id: int
    name: str
    unit_price_cents: int
    quantity: int
    line_total_cents: int
    is_available: bool
    note: str


class CartOut(BaseModel):
    restaurant_id: int | None
    restaurant_name: str | None
    items: list[CartLineOut]
    total: int
    subtotal_cents: int


class CartAddIn(BaseModel):
    item_id: int
    quantity: int = Field(default=1, ge=1, le=20)
    note: str = Field(default="", max_length=200)


class PromoCheckOut(BaseModel):
    code: str
    percent_off: int
    max_discount_cents: int
    min_subtotal_cents: int
    valid_until: str
    restaurant_id: int | None
    usable_on_cart: bool
    reason_unusable: str | None
    discount_on_cart_cents: int


class OrderIn(BaseModel):
    address_id: int
    promo_code: str | None = Field(default=None, description="Optional promo code")
    tip_cents: int = Field(default=0, ge=0, le=10000)


class OrderLineOut(BaseModel):
    item_id: int
    name: str
    quantity: int
    unit_price_cents: int


class OrderSummaryOut(BaseModel):
    order_id: int
    restaurant_id: int
    restaurant_name: str
    status: str
    total_cents: int
    placed_at: str
    delivered_at: str | None


class OrderPage(BaseModel):
    items: list[OrderSummaryOut]
    total: int
    next_cursor: str | None


class OrderOut(OrderSummaryOut):
    address_id: int
    courier_name: str | None
    promo_code: str | None
    subtotal_cents: int
    delivery_fee_cents: int
    discount_cents: int
    tip_cents: int
    cancelled_at: str | None
    reviewed: bool
    items: list[OrderLineOut]


class ReorderOut(BaseModel):
    cart: CartOut
    added_item_ids: list[int]
    skipped_unavailable: list[str]


class ReviewIn(BaseModel):
    restaurant_rating: int = Field(ge=1, le=5)
    courier_rating: int | None = Field(default=None, ge=1, le=5)
    comment: str = Field(default="", max_length=1000)


class ReviewOut(BaseModel):
    review_id: int
    order_id: int
    restaurant_rating: int
    courier_rating: int | None
    comment: str
    created_at: str


class FavoriteList(BaseModel):
    items: list[RestaurantOut]
    total: int


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


def _closed_reason(r: Restaurant) -> str | None:
    now = REFERENCE_TIME[11:16]
    if not r.is_open:
        return "temporarily closed"
    if not r.opens_at <= now < r.closes_at:
        return f"outside opening hours ({r.opens_at}-{r.closes_at} UTC)"
    return None


def _restaurant_out(r: Restaurant) -> RestaurantOut:
    reason = _closed_reason(r)
    return RestaurantOut(
        restaurant_id=r.restaurant_id,
        name=r.name,
        cuisine=r.cuisine,
        delivery_zones=r.delivery_zones.split(","),
        opens_at=r.opens_at,
        closes_at=r.closes_at,
        open_now=reason is None,
        closed_reason=reason,
        min_order_cents=r.min_order_cents,
        delivery_fee_cents=r.delivery_fee_cents,
        rating=r.rating,
    )


def _restaurant(db: Session, restaurant_id: int) -> Restaurant:
    r = db.get(Restaurant, restaurant_id)
    if r is None:
        raise HTTPException(404, f"Restaurant {restaurant_id} not found; use search_restaurants.")
    return r


def _item_out(db: Session, i: MenuItem) -> MenuItemOut:
    return MenuItemOut(
        item_id=i.item_id,
        restaurant_id=i.restaurant_id,
        restaurant_name=db.get(Restaurant, i.restaurant_id).name,
        name=i.name,
        category=i.category,
        price_cents=i.price_cents,
        is_vegetarian=bool(i.is_vegetarian),
        is_available=bool(i.is_available),
    )


def _my_address(db: Session, address_id: int) -> Address:
    a = db.get(Address, address_id)
    if a is None or a.customer_id != CURRENT_CUSTOMER_ID:
        ids = list(
            db.scalars(select(Address.address_id).where(Address.customer_id == CURRENT_CUSTOMER_ID))
        )
        raise HTTPException(404, f"Address {address_id} is not yours; your address ids: {ids}.")
    return a


def _cart_lines(db: Session) -> list[CartItem]:
    return list(
        db.scalars(
            select(CartItem)
            .where(CartItem.customer_id == CURRENT_CUSTOMER_ID)
            .order_by(CartItem.cart_item_id)
        )
    )


def _cart_out(db: Session) -> CartOut:
    lines = []
    restaurant = None
    for c in _cart_lines(db):
        item = db.get(MenuItem, c.item_id)
        restaurant = db.get(Restaurant, item.restaurant_id)
        lines.append(
            CartLineOut(
                item_id=item.item_id,
                name=item.name,
                unit_price_cents=item.price_cents,
                quantity=c.quantity,
                line_total_cents=item.price_cents * c.quantity,
                is_available=bool(item.is_available),
                note=c.note,
            )
        )
    return CartOut(
        restaurant_id=restaurant.restaurant_id if restaurant else None,
        restaurant_name=restaurant.name if restaurant else None,
        items=lines,
        total=len(lines),
        subtotal_cents=sum(line.line_total_cents for line in lines),
    )


def _cart_restaurant_id(db: Session) -> int | None:
    lines = _cart_lines(db)
    return db.get(MenuItem, lines[0].item_id).restaurant_id if lines else None


def _promo(db: Session, code: str) -> Promo:
    p = db.scalar(select(Promo).where(func.upper(Promo.code) == code.strip().upper()))
    if p is None:
        raise HTTPException(404, f"No promo code {code!r}.")
    return p


def _promo_problem(db: Session, p: Promo, restaurant_id: int | None, subtotal: int) -> str | None:
    if not p.is_active:
        return "the code is no longer active"
    if REFERENCE_TIME < p.valid_from:
        return f"the code is valid only from {p.valid_from}"
    if REFERENCE_TIME > p.valid_until:
        return f"the code expired on {p.valid_until}"
    used = db.scalar(
        select(func.count())
        .select_from(Order)
        .where(
            Order.customer_id == CURRENT_CUSTOMER_ID,
            Order.promo_id == p.promo_id,
            Order.status != "cancelled",
        )
    )
    if used >= p.max_uses_per_customer:
        return f"you have already used it {used} time(s), the limit per customer"
    if (
        p.restaurant_id is not None
        and restaurant_id is not None
        and p.restaurant_id != restaurant_id
    ):
        name = db.get(Restaurant, p.restaurant_id).name
        return f"it is only valid at restaurant {p.restaurant_id} ({name})"
    if restaurant_id is not None and subtotal < p.min_subtotal_cents:
        return f"it needs a subtotal of at least {p.min_subtotal_cents} cents (cart: {subtotal})"
    return None


def _discount(p: Promo, subtotal: int) -> int:
    return min(subtotal * p.percent_off // 100, p.max_discount_cents)


def _my_order(db: Session, order_id: int) -> Order:
    o = db.get(Order, order_id)
    if o is None or o.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(404, f"Order {order_id} is not among your orders; use list_my_orders.")
    return o


def _order_summary(db: Session, o: Order) -> OrderSummaryOut:
    return OrderSummaryOut(
        order_id=o.order_id,
        restaurant_id=o.restaurant_id,
        restaurant_name=db.get(Restaurant, o.restaurant_id).name,
        status=o.status,
        total_cents=o.total_cents,
        placed_at=o.placed_at,
        delivered_at=o.delivered_at,
    )


def _order_out(db: Session, o: Order) -> OrderOut:
    items = [
        OrderLineOut(
            item_id=line.item_id,
            name=db.get(MenuItem, line.item_id).name,
            quantity=line.quantity,
            unit_price_cents=line.unit_price_cents,
        )
        for line in db.scalars(
            select(OrderItem)
            .where(OrderItem.order_id == o.order_id)
            .order_by(OrderItem.order_item_id)
        )
    ]
    courier = db.get(Courier, o.courier_id) if o.courier_id else None
    promo = db.get(Promo, o.promo_id) if o.promo_id else None
    reviewed = db.scalar(select(Review).where(Review.order_id == o.order_id)) is not None
    return OrderOut(
        **_order_summary(db, o).model_dump(),
        address_id=o.address_id,
        courier_name=courier.name if courier else None,
        promo_code=promo.code if promo else None,
        subtotal_cents=o.subtotal_cents,
        delivery_fee_cents=o.delivery_fee_cents,
        discount_cents=o.discount_cents,
        tip_cents=o.tip_cents,
        cancelled_at=o.cancelled_at,
        reviewed=reviewed,
        items=items,
    )


def _favorites(db: Session) -> FavoriteList:
    items = [
        _restaurant_out(db.get(Restaurant, f.restaurant_id))
        for f in db.scalars(
            select(Favorite)
            .where(Favorite.customer_id == CURRENT_CUSTOMER_ID)
            .order_by(Favorite.restaurant_id)
        )
    ]
    return FavoriteList(items=items, total=len(items))


# --------------------------------------------------------------------------- tools: account


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC); restaurants' opening hours are in UTC too."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """Your profile."""
    c = db.get(Customer, CURRENT_CUSTOMER_ID)
    return ProfileOut(
        customer_id=c.customer_id,
        name=c.name,
        email=c.email,
        phone=c.phone,
        member_since=c.created_at,
    )


def _addresses(db: Session) -> AddressList:
    items = [
        AddressOut(
            address_id=a.address_id,
            label=a.label,
            line1=a.line1,
            zone=a.zone,
            is_default=bool(a.is_default),
        )
        for a in db.scalars(
            select(Address)
            .where(Address.customer_id == CURRENT_CUSTOMER_ID)
            .order_by(Address.address_id)
        )
    ]
    return AddressList(items=items, total=len(items))


@app.get("/addresses", operation_id="list_addresses", response_model=AddressList)
def list_addresses(db: Session = Depends(get_db)) -> AddressList:
    """Your delivery addresses and the delivery zone of each."""
    return _addresses(db)


@app.post("/addresses", operation_id="add_address", response_model=AddressList)
def add_address(body: AddressIn, db: Session = Depends(get_db)) -> AddressList:
    """Save a new delivery address."""
    label = body.label.strip()
    if db.scalar(
        select(Address).where(
            Address.customer_id == CURRENT_CUSTOMER_ID, func.lower(Address.label) == label.lower()
        )
    ):
        raise HTTPException(409, f"You already have an address labelled {label!r}.")
    db.add(
        Address(
            customer_id=CURRENT_CUSTOMER_ID,
            label=label,
            line1=body.line1.strip(),
            zone=body.zone,
            is_default=0,
        )
    )
    db.commit()
    return _addresses(db)


# --------------------------------------------------------------------------- tools: restaurants and menus


@app.get("/restaurants", operation_id="search_restaurants", response_model=RestaurantPage)
def search_restaurants(
    name: str | None = Query(default=None, description="Part of the restaurant name"),
    cuisine: str | None = None,
    delivers_to_address_id: int | None = Query(
        default=None, description="Only restaurants delivering to this address"
    ),
    open_now: bool = False,
    sort: Literal["rating", "delivery_fee", "name"] = "rating",
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> RestaurantPage:
    """Find restaurants by name, cuisine, delivery address and whether they are open now."""
    offset = _parse_cursor(cursor)
    stmt = select(Restaurant)
    if name:
        stmt = stmt.where(func.lower(Restaurant.name).contains(name.strip().lower()))
    if cuisine:
        stmt = stmt.where(func.lower(Restaurant.cuisine) == cuisine.strip().lower())
    rows = list(db.scalars(stmt))
    if delivers_to_address_id is not None:
        zone = _my_address(db, delivers_to_address_id).zone
        rows = [r for r in rows if zone in r.delivery_zones.split(",")]
    if open_now:
        rows = [r for r in rows if _closed_reason(r) is None]
    key = {
        "rating": lambda r: (-r.rating, r.restaurant_id),
        "delivery_fee": lambda r: (r.delivery_fee_cents, r.restaurant_id),
        "name": lambda r: (r.name, r.restaurant_id),
    }[sort]
    rows.sort(key=key)
    return RestaurantPage(
        items=[_restaurant_out(r) for r in rows[offset : offset + limit]],
        total=len(rows),
        next_cursor=_next_cursor(offset, limit, len(rows)),
    )


@app.get(
    "/restaurants/{restaurant_id}",
    operation_id="get_restaurant",
    response_model=RestaurantDetailOut,
)
def get_restaurant(restaurant_id: int, db: Session = Depends(get_db)) -> RestaurantDetailOut:
    """A restaurant with opening status and its full menu."""
    r = _restaurant(db, restaurant_id)
    menu = [
        _item_out(db, i)
        for i in db.scalars(
            select(MenuItem)
            .where(MenuItem.restaurant_id == restaurant_id)
            .order_by(MenuItem.item_id)
        )
    ]
    return RestaurantDetailOut(**_restaurant_out(r).model_dump(), menu=menu)


@app.get("/menu-items", operation_id="search_menu_items", response_model=MenuItemPage)
def search_menu_items(
    text: str | None = Query(default=None, description="Part of the dish name"),
    restaurant_id: int | None = None,
    vegetarian_only: bool = False,
    available_only: bool = False,
    max_price_cents: int | None = Query(default=None, ge=1),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> MenuItemPage:
    """Search dishes across restaurants; paginated, cheapest first."""
    offset = _parse_cursor(cursor)
    stmt = select(MenuItem)
    if text:
        stmt = stmt.where(func.lower(MenuItem.name).contains(text.strip().lower()))
    if restaurant_id is not None:
        _restaurant(db, restaurant_id)
        stmt = stmt.where(MenuItem.restaurant_id == restaurant_id)
    if vegetarian_only:
        stmt = stmt.where(MenuItem.is_vegetarian == 1)
    if available_only:
        stmt = stmt.where(MenuItem.is_available == 1)
    if max_price_cents is not None:
        stmt = stmt.where(MenuItem.price_cents <= max_price_cents)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(MenuItem.price_cents, MenuItem.item_id).offset(offset).limit(limit)
    )
    return MenuItemPage(
        items=[_item_out(db, i) for i in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


# --------------------------------------------------------------------------- tools: cart


@app.get("/cart", operation_id="get_cart", response_model=CartOut)
def get_cart(db: Session = Depends(get_db)) -> CartOut:
    """Your cart (always from a single restaurant) with its subtotal."""
    return _cart_out(db)


@app.post("/cart", operation_id="add_to_cart", response_model=CartOut)
def add_to_cart(body: CartAddIn, db: Session = Depends(get_db)) -> CartOut:
    """Add a dish to your cart (adds to the quantity if it is already there)."""
    item = db.get(MenuItem, body.item_id)
    if item is None:
        raise HTTPException(404, f"Menu item {body.item_id} not found; use search_menu_items.")
    if not item.is_available:
        raise HTTPException(409, f"{item.name} (item {item.item_id}) is sold out today.")
    current = _cart_restaurant_id(db)
    if current is not None and current != item.restaurant_id:
        name = db.get(Restaurant, current).name
        raise HTTPException(
            409,
            f"Your cart holds dishes from restaurant {current} ({name}); a cart can only hold one "
            "restaurant. Order or clear_cart first.",
        )
    line = db.scalar(
        select(CartItem).where(
            CartItem.customer_id == CURRENT_CUSTOMER_ID, CartItem.item_id == item.item_id
        )
    )
    if line:
        if line.quantity + body.quantity > 20:
            raise HTTPException(409, f"At most 20 of one dish; you already have {line.quantity}.")
        line.quantity += body.quantity
        if body.note:
            line.note = body.note.strip()
    else:
        db.add(
            CartItem(
                customer_id=CURRENT_CUSTOMER_ID,
                item_id=item.item_id,
                quantity=body.quantity,
                note=body.note.strip(),
                added_at=REFERENCE_TIME,
            )
        )
    db.commit()
    return _cart_out(db)


def _cart_line(db: Session, item_id: int) -> CartItem:
    line = db.scalar(
        select(CartItem).where(
            CartItem.customer_id == CURRENT_CUSTOMER_ID, CartItem.item_id == item_id
        )
    )
    if line is None:
        ids = [c.item_id for c in _cart_lines(db)]
        raise HTTPException(404, f"Item {item_id} is not in your cart (cart item ids: {ids}).")
    return line


@app.patch("/cart/{item_id}", operation_id="update_cart_item", response_model=CartOut)
def update_cart_item(
    item_id: int,
    quantity: int = Query(ge=1, le=20, description="New quantity; use remove_from_cart to remove"),
    db: Session = Depends(get_db),
) -> CartOut:
    """Set the quantity of a dish already in your cart."""
    line = _cart_line(db, item_id)
    if line.quantity == quantity:
        raise HTTPException(409, f"Item {item_id} already has quantity {quantity}.")
    line.quantity = quantity
    db.commit()
    return _cart_out(db)


@app.delete("/cart/{item_id}", operation_id="remove_from_cart", response_model=CartOut)
def remove_from_cart(item_id: int, db: Session = Depends(get_db)) -> CartOut:
    """Remove a dish from your cart."""
    db.delete(_cart_line(db, item_id))
    db.commit()
    return _cart_out(db)


@app.delete("/cart", operation_id="clear_cart", response_model=CartOut)
def clear_cart(db: Session = Depends(get_db)) -> CartOut:
    """Empty your cart."""
    lines = _cart_lines(db)
    if not lines:
        raise HTTPException(409, "Your cart is already empty.")
    for line in lines:
        db.delete(line)
    db.commit()
    return _cart_out(db)


@app.get("/promo-codes/{code}", operation_id="check_promo_code", response_model=PromoCheckOut)
def check_promo_code(code: str, db: Session = Depends(get_db)) -> PromoCheckOut:
    """Look up a promo code and whether (and how much) it would take off your current cart."""
    p = _promo(db, code)
    cart = _cart_out(db)
    problem = _promo_problem(db, p, cart.restaurant_id, cart.subtotal_cents)
    if problem is None and cart.restaurant_id is None:
        problem = "your cart is empty"
    return PromoCheckOut(
        code=p.code,
        percent_off=p.percent_off,
        max_discount_cents=p.max_discount_cents,
        min_subtotal_cents=p.min_subtotal_cents,
        valid_until=p.valid_until,
        restaurant_id=p.restaurant_id,
        usable_on_cart=problem is None,
        reason_unusable=problem,
        discount_on_cart_cents=_discount(p, cart.subtotal_cents) if problem is None else 0,
    )


# --------------------------------------------------------------------------- tools: orders


@app.post("/orders", operation_id="place_order", response_model=OrderOut)
def place_order(body: OrderIn, db: Session = Depends(get_db)) -> OrderOut:
    """Order your whole cart for delivery to one of your addresses, with an optional promo code
    (percent off the subtotal, capped) and tip. The restaurant must be open and deliver there."""
    address = _my_address(db, body.address_id)
    lines = _cart_lines(db)
    if not lines:
        raise HTTPException(409, "Your cart is empty; add dishes with add_to_cart first.")
    restaurant = db.get(Restaurant, db.get(MenuItem, lines[0].item_id).restaurant_id)
    reason = _closed_reason(restaurant)
    if reason:
        raise HTTPException(409, f"{restaurant.name} is closed right now: {reason}.")
    zones = restaurant.delivery_zones.split(",")
    if address.zone not in zones:
        raise HTTPException(
            409,
            f"{restaurant.name} delivers only to zones {zones}; address {address.address_id} "
            f"({address.label}) is in zone {address.zone}.",
        )
    subtotal = 0
    for line in lines:
        item = db.get(MenuItem, line.item_id)
        if not item.is_available:
            raise HTTPException(
                409,
                f"{item.name} (item {item.item_id}) is sold out; remove it with remove_from_cart.",
            )
        subtotal += item.price_cents * line.quantity
    if subtotal < restaurant.min_order_cents:
        raise HTTPException(
            409,
            f"{restaurant.name} needs a subtotal of at least {restaurant.min_order_cents} cents; "
            f"your cart is {subtotal}.",
        )
    promo, discount = None, 0
    if body.promo_code:
        promo = _promo(db, body.promo_code)
        problem = _promo_problem(db, promo, restaurant.restaurant_id, subtotal)
        if problem:
            raise HTTPException(409, f"Promo {promo.code} cannot be used: {problem}.")
        discount = _discount(promo, subtotal)
    order = Order(
        customer_id=CURRENT_CUSTOMER_ID,
        restaurant_id=restaurant.restaurant_id,
        address_id=address.address_id,
        courier_id=None,
        promo_id=promo.promo_id if promo else None,
        status="placed",
        subtotal_cents=subtotal,
        delivery_fee_cents=restaurant.delivery_fee_cents,
        discount_cents=discount,
        tip_cents=body.tip_cents,
        total_cents=subtotal - discount + restaurant.delivery_fee_cents + body.tip_cents,
        placed_at=REFERENCE_TIME,
    )
    db.add(order)
    db.flush()
    for line in lines:
        item = db.get(MenuItem, line.item_id)
        db.add(
            OrderItem(
                order_id=order.order_id,
                item_id=item.item_id,
                quantity=line.quantity,
                unit_price_cents=item.price_cents,
            )
        )
        db.delete(line)
    db.commit()
    return _order_out(db, order)


@app.get("/orders", operation_id="list_my_orders", response_model=OrderPage)
def list_my_orders(
    status: Literal["placed", "preparing", "out_for_delivery", "delivered", "cancelled"]
    | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> OrderPage:
    """Your orders, newest first, optionally by status; paginated."""
    offset = _parse_cursor(cursor)
    stmt = select(Order).where(Order.customer_id == CURRENT_CUSTOMER_ID)
    if status:
        stmt = stmt.where(Order.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Order.placed_at.desc(), Order.order_id.desc()).offset(offset).limit(limit)
    )
    return OrderPage(
        items=[_order_summary(db, o) for o in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/orders/{order_id}", operation_id="get_order", response_model=OrderOut)
def get_order(order_id: int, db: Session = Depends(get_db)) -> OrderOut:
    """One of your orders with its dishes, amounts, courier and whether you reviewed it."""
    return _order_out(db, _my_order(db, order_id))


@app.post("/orders/{order_id}/cancel", operation_id="cancel_order", response_model=OrderOut)
def cancel_order(order_id: int, db: Session = Depends(get_db)) -> OrderOut:
    """Cancel an order the restaurant has not started preparing yet (status placed)."""
    o = _my_order(db, order_id)
    if o.status != "placed":
        raise HTTPException(
            409,
            f"Order {order_id} is {o.status}; only orders still 'placed' (not yet being prepared) "
            "can be cancelled.",
        )
    o.status = "cancelled"
    o.cancelled_at = REFERENCE_TIME
    db.commit()
    return _order_out(db, o)


@app.post("/orders/{order_id}/reorder", operation_id="reorder", response_model=ReorderOut)
def reorder(order_id: int, db: Session = Depends(get_db)) -> ReorderOut:
    """Put the dishes of a past order back into your cart (dishes no longer available are skipped)."""
    o = _my_order(db, order_id)
    current = _cart_restaurant_id(db)
    if current is not None and current != o.restaurant_id:
        name = db.get(Restaurant, current).name
        raise HTTPException(
            409,
            f"Your cart holds dishes from {name} (restaurant {current}); clear_cart before "
            f"reordering from another restaurant.",
        )
    added, skipped = [], []
    for line in db.scalars(
        select(OrderItem).where(OrderItem.order_id == order_id).order_by(OrderItem.order_item_id)
    ):
        item = db.get(MenuItem, line.item_id)
        if not item.is_available:
            skipped.append(item.name)
            continue
        existing = db.scalar(
            select(CartItem).where(
                CartItem.customer_id == CURRENT_CUSTOMER_ID, CartItem.item_id == item.item_id
            )
        )
        if existing:
            existing.quantity = min(20, existing.quantity + line.quantity)
        else:
            db.add(
                CartItem(
                    customer_id=CURRENT_CUSTOMER_ID,
                    item_id=item.item_id,
                    quantity=line.quantity,
                    note="",
                    added_at=REFERENCE_TIME,
                )
            )
        added.append(item.item_id)
    if not added:
        raise HTTPException(
            409, f"None of the dishes of order {order_id} are available now: {skipped}."
        )
    db.commit()
    return ReorderOut(cart=_cart_out(db), added_item_ids=added, skipped_unavailable=skipped)


@app.post("/orders/{order_id}/review", operation_id="rate_order", response_model=ReviewOut)
def rate_order(order_id: int, body: ReviewIn, db: Session = Depends(get_db)) -> ReviewOut:
    """Rate a delivered order (restaurant and courier) once, within 14 days of delivery."""
    o = _my_order(db, order_id)
    if o.status != "delivered" or not o.delivered_at:
        raise HTTPException(
            409, f"Order {order_id} is {o.status}; only delivered orders can be rated."
        )
    deadline = _ts(o.delivered_at) + timedelta(days=REVIEW_WINDOW_DAYS)
    if _ts(REFERENCE_TIME) > deadline:
        raise HTTPException(
            409,
            f"Order {order_id} was delivered {o.delivered_at}; reviews close {REVIEW_WINDOW_DAYS} days after delivery.",
        )
    if db.scalar(select(Review).where(Review.order_id == order_id)):
        raise HTTPException(409, f"You already rated order {order_id}.")
    if body.courier_rating is not None and o.courier_id is None:
        raise HTTPException(400, f"Order {order_id} had no courier to rate; omit courier_rating.")
    r = Review(
        order_id=order_id,
        customer_id=CURRENT_CUSTOMER_ID,
        restaurant_rating=body.restaurant_rating,
        courier_rating=body.courier_rating,
        comment=body.comment.strip(),
        created_at=REFERENCE_TIME,
    )
    db.add(r)
    db.commit()
    return ReviewOut(
        review_id=r.review_id,
        order_id=order_id,
        restaurant_rating=r.restaurant_rating,
        courier_rating=r.courier_rating,
        comment=r.comment,
        created_at=r.created_at,
    )


# --------------------------------------------------------------------------- tools: favourites


@app.get("/favorites", operation_id="list_favorites", response_model=FavoriteList)
def list_favorites(db: Session = Depends(get_db)) -> FavoriteList:
    """Your favourite restaurants with whether each is open now."""
    return _favorites(db)


@app.post("/favorites/{restaurant_id}", operation_id="add_favorite", response_model=FavoriteList)
def add_favorite(restaurant_id: int, db: Session = Depends(get_db)) -> FavoriteList:
    """Add a restaurant to your favourites."""
    r = _restaurant(db, restaurant_id)
    if db.get(Favorite, (CURRENT_CUSTOMER_ID, restaurant_id)):
        raise HTTPException(409, f"{r.name} (restaurant {restaurant_id}) is already a favourite.")
    db.add(
        Favorite(
            customer_id=CURRENT_CUSTOMER_ID, restaurant_id=restaurant_id, added_at=REFERENCE_TIME
        )
    )
    db.commit()
    return _favorites(db)


@app.delete(
    "/favorites/{restaurant_id}", operation_id="remove_favorite", response_model=FavoriteList
)
def remove_favorite(restaurant_id: int, db: Session = Depends(get_db)) -> FavoriteList:
    """Remove a restaurant from your favourites."""
    fav = db.get(Favorite, (CURRENT_CUSTOMER_ID, restaurant_id))
    if fav is None:
        ids = [f.restaurant_id for f in _favorites(db).items]
        raise HTTPException(
            404, f"Restaurant {restaurant_id} is not a favourite (favourites: {ids})."
        )
    db.delete(fav)
    db.commit()
    return _favorites(db)
