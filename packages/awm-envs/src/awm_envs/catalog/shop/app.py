"""Online shop: browse the catalogue, manage cart, wishlist and addresses, check out,
cancel, review and return. The logged-in customer is user 1 (Maya Lindqvist).

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

REFERENCE_TIME = "2025-03-14T10:00:00Z"
CURRENT_USER_ID = 1
RETURN_WINDOW_DAYS = 30
MAX_PAGE = 50


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    created_at: Mapped[str]


class Address(Base):
    __tablename__ = "addresses"
    address_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    label: Mapped[str]
    recipient: Mapped[str]
    line1: Mapped[str]
    city: Mapped[str]
    postal_code: Mapped[str]
    country: Mapped[str]
    is_default: Mapped[int] = mapped_column(default=0)


class Category(Base):
    __tablename__ = "categories"
    category_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("categories.category_id"))


class Product(Base):
    __tablename__ = "products"
    product_id: Mapped[int] = mapped_column(primary_key=True)
    category_id: Mapped[int] = mapped_column(ForeignKey("categories.category_id"))
    sku: Mapped[str]
    name: Mapped[str]
    brand: Mapped[str]
    description: Mapped[str]
    price_cents: Mapped[int]
    stock: Mapped[int]
    is_active: Mapped[int]
    created_at: Mapped[str]


class Review(Base):
    __tablename__ = "reviews"
    review_id: Mapped[int] = mapped_column(primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.product_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    rating: Mapped[int]
    title: Mapped[str]
    body: Mapped[str]
    created_at: Mapped[str]


class Coupon(Base):
    __tablename__ = "coupons"
    coupon_id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str]
    percent_off: Mapped[int]
    min_subtotal_cents: Mapped[int]
    valid_from: Mapped[str]
    valid_until: Mapped[str]
    max_uses: Mapped[int]
    times_used: Mapped[int]
    is_active: Mapped[int]


class CartItem(Base):
    __tablename__ = "cart_items"
    cart_item_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.product_id"))
    quantity: Mapped[int]
    added_at: Mapped[str]


class WishlistItem(Base):
    __tablename__ = "wishlist_items"
    wishlist_item_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.product_id"))
    added_at: Mapped[str]


class Order(Base):
    __tablename__ = "orders"
    order_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    address_id: Mapped[int] = mapped_column(ForeignKey("addresses.address_id"))
    coupon_id: Mapped[int | None] = mapped_column(ForeignKey("coupons.coupon_id"))
    status: Mapped[str]
    subtotal_cents: Mapped[int]
    discount_cents: Mapped[int]
    total_cents: Mapped[int]
    created_at: Mapped[str]
    shipped_at: Mapped[str | None]
    delivered_at: Mapped[str | None]
    cancelled_at: Mapped[str | None]
    cancel_reason: Mapped[str | None]


class OrderItem(Base):
    __tablename__ = "order_items"
    order_item_id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.product_id"))
    quantity: Mapped[int]
    unit_price_cents: Mapped[int]


class Return(Base):
    __tablename__ = "returns"
    return_id: Mapped[int] = mapped_column(primary_key=True)
    order_item_id: Mapped[int] = mapped_column(ForeignKey("order_items.order_item_id"))
    quantity: Mapped[int]
    reason: Mapped[str]
    status: Mapped[str]
    created_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('SHOP_DB', 'shop.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Shop",
    description="Online shop for the logged-in customer (user 1). Amounts are integer cents (USD).",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"


class ProfileOut(BaseModel):
    user_id: int
    name: str
    email: str
    member_since: str


class CategoryOut(BaseModel):
    category_id: int
    name: str
    parent_id: int | None


class CategoryList(BaseModel):
    items: list[CategoryOut]
    total: int


class ProductOut(BaseModel):
    product_id: int
    sku: str
    name: str
    brand: str
    category_id: int
    category_name: str
    price_cents: int
    stock: int
    in_stock: bool
    is_active: bool


class ProductDetailOut(ProductOut):
    description: str
    average_rating: float | None
    review_count: int


class ProductPage(BaseModel):
    items: list[ProductOut]
    total: int
    next_cursor: str | None


class ReviewOut(BaseModel):
    review_id: int
    product_id: int
    product_name: str
    reviewer_name: str
    rating: int
    title: str
    body: str
    created_at: str


class ReviewPage(BaseModel):
    items: list[ReviewOut]
    total: int
    next_cursor: str | None


class ReviewIn(BaseModel):
    product_id: int
    rating: int = Field(ge=1, le=5, description="1 (worst) to 5 (best)")
    title: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=4000)


class CartLineOut(BaseModel):
    cart_item_id: int
    product_id: int
    name: str
    brand: str
    unit_price_cents: int
    quantity: int
    line_total_cents: int
    in_stock: int


class CartOut(BaseModel):
    items: list[CartLineOut]
    total: int
    subtotal_cents: int


class CartAddIn(BaseModel):
    product_id: int
    quantity: int = Field(default=1, ge=1, le=20)


class CartUpdateIn(BaseModel):
    product_id: int
    quantity: int = Field(
        ge=1, le=20, description="New quantity; use remove_from_cart to remove a line"
    )


class WishlistLineOut(BaseModel):
    wishlist_item_id: int
    product_id: int
    name: str
    brand: str
    price_cents: int
    stock: int
    is_active: bool
    added_at: str


class WishlistOut(BaseModel):
    items: list[WishlistLineOut]
    total: int


class WishlistAddIn(BaseModel):
    product_id: int


class AddressOut(BaseModel):
    address_id: int
    label: str
    recipient: str
    line1: str
    city: str
    postal_code: str
    country: str
    is_default: bool


class AddressList(BaseModel):
    items: list[AddressOut]
    total: int


class AddressIn(BaseModel):
    label: str = Field(min_length=1, max_length=40)
    recipient: str = Field(min_length=1, max_length=80)
    line1: str = Field(min_length=1, max_length=120)
    city: str = Field(min_length=1, max_length=60)
    postal_code: str = Field(min_length=1, max_length=12)
    country: str = Field(min_length=2, max_length=2, description="ISO 3166 alpha-2, e.g. US")
    make_default: bool = False


class CouponOut(BaseModel):
    coupon_id: int
    code: str
    percent_off: int
    min_subtotal_cents: int
    valid_from: str
    valid_until: str
    usable_now: bool
    reason_unusable: str | None


class CheckoutIn(BaseModel):
    address_id: int
    coupon_code: str | None = None
    product_ids: list[int] | None = Field(
        default=None, description="Check out only these cart lines; default: the whole cart."
    )


class OrderLineOut(BaseModel):
    order_item_id: int
    product_id: int
    name: str
    quantity: int
    unit_price_cents: int
    returned_quantity: int


class OrderSummaryOut(BaseModel):
    order_id: int
    status: str
    created_at: str
    shipped_at: str | None
    delivered_at: str | None
    total_cents: int
    item_count: int
    address_id: int


class OrderOut(OrderSummaryOut):
    subtotal_cents: int
    discount_cents: int
    coupon_code: str | None
    cancelled_at: str | None
    cancel_reason: str | None
    items: list[OrderLineOut]


class OrderPage(BaseModel):
    items: list[OrderSummaryOut]
    total: int
    next_cursor: str | None


class OrderAddressIn(BaseModel):
    address_id: int


class ReturnIn(BaseModel):
    order_id: int
    product_id: int
    quantity: int = Field(default=1, ge=1)
    reason: str = Field(min_length=3, max_length=300)


class ReturnOut(BaseModel):
    return_id: int
    order_id: int
    order_item_id: int
    product_id: int
    product_name: str
    quantity: int
    reason: str
    status: str
    created_at: str


class ReturnList(BaseModel):
    items: list[ReturnOut]
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


def _category_names(db: Session) -> dict[int, str]:
    return {c.category_id: c.name for c in db.scalars(select(Category))}


def _product_out(p: Product, cats: dict[int, str]) -> ProductOut:
    return ProductOut(
        product_id=p.product_id,
        sku=p.sku,
        name=p.name,
        brand=p.brand,
        category_id=p.category_id,
        category_name=cats.get(p.category_id, ""),
        price_cents=p.price_cents,
        stock=p.stock,
        in_stock=p.stock > 0,
        is_active=bool(p.is_active),
    )


def _get_product(db: Session, product_id: int) -> Product:
    product = db.get(Product, product_id)
    if product is None:
        raise HTTPException(
            404, f"Product {product_id} not found. Use search_products to find product ids."
        )
    return product


def _my_order(db: Session, order_id: int) -> Order:
    order = db.get(Order, order_id)
    if order is None or order.user_id != CURRENT_USER_ID:
        raise HTTPException(
            404, f"Order {order_id} not found among your orders. Use list_my_orders to see them."
        )
    return order


def _my_address(db: Session, address_id: int) -> Address:
    address = db.get(Address, address_id)
    if address is None or address.user_id != CURRENT_USER_ID:
        valid = [
            a.address_id
            for a in db.scalars(select(Address).where(Address.user_id == CURRENT_USER_ID))
        ]
        raise HTTPException(
            404, f"Address {address_id} is not one of your addresses; your address ids: {valid}."
        )
    return address


def _returned_qty(db: Session, order_item_id: int) -> int:
    total = db.scalar(
        select(func.coalesce(func.sum(Return.quantity), 0)).where(
            Return.order_item_id == order_item_id, Return.status != "rejected"
        )
    )
    return int(total or 0)


def _order_summary(db: Session, o: Order) -> OrderSummaryOut:
    count = db.scalar(
        select(func.coalesce(func.sum(OrderItem.quantity), 0)).where(
            OrderItem.order_id == o.order_id
        )
    )
    return OrderSummaryOut(
        order_id=o.order_id,
        status=o.status,
        created_at=o.created_at,
        shipped_at=o.shipped_at,
        delivered_at=o.delivered_at,
        total_cents=o.total_cents,
        item_count=int(count or 0),
        address_id=o.address_id,
    )


def _order_out(db: Session, o: Order) -> OrderOut:
    lines = []
    for item in db.scalars(
        select(OrderItem).where(OrderItem.order_id == o.order_id).order_by(OrderItem.order_item_id)
    ):
        product = db.get(Product, item.product_id)
        lines.append(
            OrderLineOut(
                order_item_id=item.order_item_id,
                product_id=item.product_id,
                name=product.name if product else "",
                quantity=item.quantity,
                unit_price_cents=item.unit_price_cents,
                returned_quantity=_returned_qty(db, item.order_item_id),
            )
        )
    coupon = db.get(Coupon, o.coupon_id) if o.coupon_id else None
    summary = _order_summary(db, o)
    return OrderOut(
        **summary.model_dump(),
        subtotal_cents=o.subtotal_cents,
        discount_cents=o.discount_cents,
        coupon_code=coupon.code if coupon else None,
        cancelled_at=o.cancelled_at,
        cancel_reason=o.cancel_reason,
        items=lines,
    )


def _coupon_problem(c: Coupon, subtotal_cents: int | None) -> str | None:
    now = _ts(REFERENCE_TIME)
    if not c.is_active:
        return "this coupon has been deactivated"
    if now < _ts(c.valid_from):
        return f"this coupon is not valid until {c.valid_from}"
    if now > _ts(c.valid_until):
        return f"this coupon expired on {c.valid_until}"
    if c.times_used >= c.max_uses:
        return "this coupon has reached its usage limit"
    if subtotal_cents is not None and subtotal_cents < c.min_subtotal_cents:
        return f"the subtotal {subtotal_cents} is below the coupon's minimum of {c.min_subtotal_cents} cents"
    return None


def _review_out(db: Session, r: Review) -> ReviewOut:
    product = db.get(Product, r.product_id)
    user = db.get(User, r.user_id)
    return ReviewOut(
        review_id=r.review_id,
        product_id=r.product_id,
        product_name=product.name if product else "",
        reviewer_name=user.name if user else "",
        rating=r.rating,
        title=r.title,
        body=r.body,
        created_at=r.created_at,
    )


def _cart_lines(db: Session) -> list[CartItem]:
    return list(
        db.scalars(
            select(CartItem)
            .where(CartItem.user_id == CURRENT_USER_ID)
            .order_by(CartItem.cart_item_id)
        )
    )


# --------------------------------------------------------------------------- tools: account


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The shop's current date and time (UTC). Use it for 'today', return windows and coupon validity."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """The logged-in customer's profile."""
    user = db.get(User, CURRENT_USER_ID)
    if user is None:
        raise HTTPException(500, "The logged-in user is missing from the database.")
    return ProfileOut(
        user_id=user.user_id, name=user.name, email=user.email, member_since=user.created_at
    )


@app.get("/addresses", operation_id="list_addresses", response_model=AddressList)
def list_addresses(db: Session = Depends(get_db)) -> AddressList:
    """Your saved shipping addresses."""
    rows = db.scalars(
        select(Address).where(Address.user_id == CURRENT_USER_ID).order_by(Address.address_id)
    )
    items = [
        AddressOut(
            **{k: getattr(a, k) for k in AddressOut.model_fields if k != "is_default"},
            is_default=bool(a.is_default),
        )
        for a in rows
    ]
    return AddressList(items=items, total=len(items))


@app.post("/addresses", operation_id="add_address", response_model=AddressOut)
def add_address(body: AddressIn, db: Session = Depends(get_db)) -> AddressOut:
    """Save a new shipping address; optionally make it the default."""
    mine = list(db.scalars(select(Address).where(Address.user_id == CURRENT_USER_ID)))
    if any(a.label.lower() == body.label.strip().lower() for a in mine):
        raise HTTPException(
            409, f"You already have an address labelled {body.label!r}; choose another label."
        )
    if body.make_default:
        for a in mine:
            a.is_default = 0
    address = Address(
        user_id=CURRENT_USER_ID,
        label=body.label.strip(),
        recipient=body.recipient.strip(),
        line1=body.line1.strip(),
        city=body.city.strip(),
        postal_code=body.postal_code.strip(),
        country=body.country.upper(),
        is_default=1 if body.make_default or not mine else 0,
    )
    db.add(address)
    db.commit()
    return AddressOut(
        **{k: getattr(address, k) for k in AddressOut.model_fields if k != "is_default"},
        is_default=bool(address.is_default),
    )


@app.post(
    "/addresses/{address_id}/default", operation_id="set_default_address", response_model=AddressOut
)
def set_default_address(address_id: int, db: Session = Depends(get_db)) -> AddressOut:
    """Make one of your addresses the default shipping address."""
    address = _my_address(db, address_id)
    for a in db.scalars(select(Address).where(Address.user_id == CURRENT_USER_ID)):
        a.is_default = 1 if a.address_id == address_id else 0
    db.commit()
    return AddressOut(
        **{k: getattr(address, k) for k in AddressOut.model_fields if k != "is_default"},
        is_default=True,
    )


# --------------------------------------------------------------------------- tools: catalogue


@app.get("/categories", operation_id="list_categories", response_model=CategoryList)
def list_categories(db: Session = Depends(get_db)) -> CategoryList:
    """All product categories (parent_id links sub-categories to their parent)."""
    items = [
        CategoryOut(category_id=c.category_id, name=c.name, parent_id=c.parent_id)
        for c in db.scalars(select(Category).order_by(Category.category_id))
    ]
    return CategoryList(items=items, total=len(items))


@app.get("/products", operation_id="search_products", response_model=ProductPage)
def search_products(
    query: str | None = Query(
        default=None, description="Case-insensitive match on name, brand or SKU"
    ),
    category_id: int | None = Query(default=None, description="Includes sub-categories"),
    min_price_cents: int | None = Query(default=None, ge=0),
    max_price_cents: int | None = Query(default=None, ge=0),
    in_stock_only: bool = False,
    include_inactive: bool = Query(default=False, description="Include discontinued products"),
    sort: Literal["relevance", "price_asc", "price_desc", "name"] = "relevance",
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = Query(default=None, description="next_cursor from the previous page"),
    db: Session = Depends(get_db),
) -> ProductPage:
    """Search the catalogue with filters; paginated (items, total, next_cursor)."""
    offset = _parse_cursor(cursor)
    stmt = select(Product)
    if query:
        like = f"%{query.strip().lower()}%"
        stmt = stmt.where(
            func.lower(Product.name).like(like)
            | func.lower(Product.brand).like(like)
            | func.lower(Product.sku).like(like)
        )
    if category_id is not None:
        cats = list(db.scalars(select(Category)))
        if all(c.category_id != category_id for c in cats):
            raise HTTPException(
                404, f"Category {category_id} not found. Use list_categories for valid ids."
            )
        ids = {category_id} | {c.category_id for c in cats if c.parent_id == category_id}
        stmt = stmt.where(Product.category_id.in_(ids))
    if min_price_cents is not None:
        stmt = stmt.where(Product.price_cents >= min_price_cents)
    if max_price_cents is not None:
        stmt = stmt.where(Product.price_cents <= max_price_cents)
    if in_stock_only:
        stmt = stmt.where(Product.stock > 0)
    if not include_inactive:
        stmt = stmt.where(Product.is_active == 1)
    order = {
        "relevance": (Product.product_id,),
        "price_asc": (Product.price_cents, Product.product_id),
        "price_desc": (Product.price_cents.desc(), Product.product_id),
        "name": (Product.name, Product.product_id),
    }[sort]
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(stmt.order_by(*order).offset(offset).limit(limit))
    names = _category_names(db)
    return ProductPage(
        items=[_product_out(p, names) for p in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/products/{product_id}", operation_id="get_product", response_model=ProductDetailOut)
def get_product(product_id: int, db: Session = Depends(get_db)) -> ProductDetailOut:
    """Full details of one product, with its average rating and review count."""
    p = _get_product(db, product_id)
    avg, count = db.execute(
        select(func.avg(Review.rating), func.count(Review.review_id)).where(
            Review.product_id == product_id
        )
    ).one()
    base = _product_out(p, _category_names(db))
    return ProductDetailOut(
        **base.model_dump(),
        description=p.description,
        average_rating=round(float(avg), 2) if avg is not None else None,
        review_count=int(count),
    )


@app.get(
    "/products/{product_id}/reviews", operation_id="list_product_reviews", response_model=ReviewPage
)
def list_product_reviews(
    product_id: int,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> ReviewPage:
    """Reviews of a product, newest first; paginated."""
    _get_product(db, product_id)
    offset = _parse_cursor(cursor)
    stmt = select(Review).where(Review.product_id == product_id)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Review.created_at.desc(), Review.review_id.desc()).offset(offset).limit(limit)
    )
    return ReviewPage(
        items=[_review_out(db, r) for r in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


# --------------------------------------------------------------------------- tools: reviews


@app.get("/me/reviews", operation_id="list_my_reviews", response_model=ReviewPage)
def list_my_reviews(
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> ReviewPage:
    """Reviews you have written, newest first; paginated."""
    offset = _parse_cursor(cursor)
    stmt = select(Review).where(Review.user_id == CURRENT_USER_ID)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Review.created_at.desc(), Review.review_id.desc()).offset(offset).limit(limit)
    )
    return ReviewPage(
        items=[_review_out(db, r) for r in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.post("/reviews", operation_id="create_review", response_model=ReviewOut)
def create_review(body: ReviewIn, db: Session = Depends(get_db)) -> ReviewOut:
    """Review a product you have received (it must be on one of your delivered orders)."""
    product = _get_product(db, body.product_id)
    delivered = db.scalar(
        select(func.count())
        .select_from(OrderItem)
        .join(Order, Order.order_id == OrderItem.order_id)
        .where(
            Order.user_id == CURRENT_USER_ID,
            Order.status == "delivered",
            OrderItem.product_id == product.product_id,
        )
    )
    if not delivered:
        raise HTTPException(
            403,
            f"You can only review products delivered to you; product {product.product_id} is on none of your delivered orders.",
        )
    existing = db.scalar(
        select(Review).where(
            Review.user_id == CURRENT_USER_ID, Review.product_id == product.product_id
        )
    )
    if existing is not None:
        raise HTTPException(
            409,
            f"You already reviewed product {product.product_id} (review {existing.review_id}); delete it with delete_my_review first.",
        )
    review = Review(
        product_id=product.product_id,
        user_id=CURRENT_USER_ID,
        rating=body.rating,
        title=body.title.strip(),
        body=body.body.strip(),
        created_at=REFERENCE_TIME,
    )
    db.add(review)
    db.commit()
    return _review_out(db, review)


@app.delete("/reviews/{review_id}", operation_id="delete_my_review", response_model=ReviewOut)
def delete_my_review(review_id: int, db: Session = Depends(get_db)) -> ReviewOut:
    """Delete one of your own reviews."""
    review = db.get(Review, review_id)
    if review is None:
        raise HTTPException(
            404, f"Review {review_id} not found. Use list_my_reviews to see your reviews."
        )
    if review.user_id != CURRENT_USER_ID:
        raise HTTPException(
            403,
            f"Review {review_id} was written by another customer; you can only delete your own.",
        )
    out = _review_out(db, review)
    db.delete(review)
    db.commit()
    return out


# --------------------------------------------------------------------------- tools: cart


def _cart_out(db: Session) -> CartOut:
    lines = []
    for c in _cart_lines(db):
        p = db.get(Product, c.product_id)
        lines.append(
            CartLineOut(
                cart_item_id=c.cart_item_id,
                product_id=c.product_id,
                name=p.name,
                brand=p.brand,
                unit_price_cents=p.price_cents,
                quantity=c.quantity,
                line_total_cents=p.price_cents * c.quantity,
                in_stock=p.stock,
            )
        )
    return CartOut(
        items=lines, total=len(lines), subtotal_cents=sum(x.line_total_cents for x in lines)
    )


def _check_buyable(p: Product, quantity: int) -> None:
    if not p.is_active:
        raise HTTPException(
            409, f"Product {p.product_id} ({p.name}) is discontinued and cannot be bought."
        )
    if p.stock < quantity:
        raise HTTPException(
            409,
            f"Only {p.stock} of product {p.product_id} ({p.name}) in stock; you asked for {quantity}.",
        )


@app.get("/cart", operation_id="get_cart", response_model=CartOut)
def get_cart(db: Session = Depends(get_db)) -> CartOut:
    """Your shopping cart with current prices and subtotal."""
    return _cart_out(db)


@app.post("/cart", operation_id="add_to_cart", response_model=CartOut)
def add_to_cart(body: CartAddIn, db: Session = Depends(get_db)) -> CartOut:
    """Add a product to your cart (adds to the quantity if it is already there)."""
    p = _get_product(db, body.product_id)
    line = db.scalar(
        select(CartItem).where(
            CartItem.user_id == CURRENT_USER_ID, CartItem.product_id == p.product_id
        )
    )
    new_qty = body.quantity + (line.quantity if line else 0)
    _check_buyable(p, new_qty)
    if line:
        line.quantity = new_qty
    else:
        db.add(
            CartItem(
                user_id=CURRENT_USER_ID,
                product_id=p.product_id,
                quantity=new_qty,
                added_at=REFERENCE_TIME,
            )
        )
    db.commit()
    return _cart_out(db)


@app.patch("/cart", operation_id="update_cart_item", response_model=CartOut)
def update_cart_item(body: CartUpdateIn, db: Session = Depends(get_db)) -> CartOut:
    """Set the quantity of a product already in your cart."""
    line = db.scalar(
        select(CartItem).where(
            CartItem.user_id == CURRENT_USER_ID, CartItem.product_id == body.product_id
        )
    )
    if line is None:
        in_cart = [c.product_id for c in _cart_lines(db)]
        raise HTTPException(
            404,
            f"Product {body.product_id} is not in your cart (cart product ids: {in_cart}); use add_to_cart.",
        )
    _check_buyable(db.get(Product, body.product_id), body.quantity)
    line.quantity = body.quantity
    db.commit()
    return _cart_out(db)


@app.delete("/cart/{product_id}", operation_id="remove_from_cart", response_model=CartOut)
def remove_from_cart(product_id: int, db: Session = Depends(get_db)) -> CartOut:
    """Remove a product from your cart."""
    line = db.scalar(
        select(CartItem).where(
            CartItem.user_id == CURRENT_USER_ID, CartItem.product_id == product_id
        )
    )
    if line is None:
        in_cart = [c.product_id for c in _cart_lines(db)]
        raise HTTPException(
            404, f"Product {product_id} is not in your cart (cart product ids: {in_cart})."
        )
    db.delete(line)
    db.commit()
    return _cart_out(db)


# --------------------------------------------------------------------------- tools: wishlist


def _wishlist_out(db: Session) -> WishlistOut:
    items = []
    rows = db.scalars(
        select(WishlistItem)
        .where(WishlistItem.user_id == CURRENT_USER_ID)
        .order_by(WishlistItem.wishlist_item_id)
    )
    for w in rows:
        p = db.get(Product, w.product_id)
        items.append(
            WishlistLineOut(
                wishlist_item_id=w.wishlist_item_id,
                product_id=p.product_id,
                name=p.name,
                brand=p.brand,
                price_cents=p.price_cents,
                stock=p.stock,
                is_active=bool(p.is_active),
                added_at=w.added_at,
            )
        )
    return WishlistOut(items=items, total=len(items))


@app.get("/wishlist", operation_id="list_wishlist", response_model=WishlistOut)
def list_wishlist(db: Session = Depends(get_db)) -> WishlistOut:
    """Your wishlist with current price and stock of each product."""
    return _wishlist_out(db)


@app.post("/wishlist", operation_id="add_to_wishlist", response_model=WishlistOut)
def add_to_wishlist(body: WishlistAddIn, db: Session = Depends(get_db)) -> WishlistOut:
    """Save a product to your wishlist."""
    p = _get_product(db, body.product_id)
    exists = db.scalar(
        select(WishlistItem).where(
            WishlistItem.user_id == CURRENT_USER_ID, WishlistItem.product_id == p.product_id
        )
    )
    if exists:
        raise HTTPException(409, f"Product {p.product_id} ({p.name}) is already on your wishlist.")
    db.add(WishlistItem(user_id=CURRENT_USER_ID, product_id=p.product_id, added_at=REFERENCE_TIME))
    db.commit()
    return _wishlist_out(db)


@app.delete(
    "/wishlist/{product_id}", operation_id="remove_from_wishlist", response_model=WishlistOut
)
def remove_from_wishlist(product_id: int, db: Session = Depends(get_db)) -> WishlistOut:
    """Remove a product from your wishlist."""
    w = db.scalar(
        select(WishlistItem).where(
            WishlistItem.user_id == CURRENT_USER_ID, WishlistItem.product_id == product_id
        )
    )
    if w is None:
        ids = [x.product_id for x in _wishlist_out(db).items]
        raise HTTPException(
            404, f"Product {product_id} is not on your wishlist (wishlist product ids: {ids})."
        )
    db.delete(w)
    db.commit()
    return _wishlist_out(db)


# --------------------------------------------------------------------------- tools: coupons and checkout


@app.get("/coupons/{code}", operation_id="get_coupon", response_model=CouponOut)
def get_coupon(code: str, db: Session = Depends(get_db)) -> CouponOut:
    """Look up a coupon code and whether it can be used now."""
    c = db.scalar(select(Coupon).where(func.upper(Coupon.code) == code.strip().upper()))
    if c is None:
        raise HTTPException(404, f"No coupon with code {code!r}.")
    problem = _coupon_problem(c, None)
    return CouponOut(
        coupon_id=c.coupon_id,
        code=c.code,
        percent_off=c.percent_off,
        min_subtotal_cents=c.min_subtotal_cents,
        valid_from=c.valid_from,
        valid_until=c.valid_until,
        usable_now=problem is None,
        reason_unusable=problem,
    )


@app.post("/checkout", operation_id="checkout", response_model=OrderOut)
def checkout(body: CheckoutIn, db: Session = Depends(get_db)) -> OrderOut:
    """Place an order for your cart (or the listed cart products), paid immediately.

    Stock is reserved, the lines leave the cart, and a coupon (percent off the
    subtotal, rounded down to the cent) is applied if given and valid.
    """
    address = _my_address(db, body.address_id)
    lines = _cart_lines(db)
    if not lines:
        raise HTTPException(409, "Your cart is empty; add products with add_to_cart first.")
    if body.product_ids is not None:
        wanted = set(body.product_ids)
        if not wanted:
            raise HTTPException(400, "product_ids is empty; omit it to check out the whole cart.")
        missing = wanted - {c.product_id for c in lines}
        if missing:
            raise HTTPException(
                404,
                f"Products {sorted(missing)} are not in your cart (cart product ids: {[c.product_id for c in lines]}).",
            )
        lines = [c for c in lines if c.product_id in wanted]
    subtotal = 0
    for c in lines:
        p = db.get(Product, c.product_id)
        _check_buyable(p, c.quantity)
        subtotal += p.price_cents * c.quantity
    coupon = None
    discount = 0
    if body.coupon_code:
        coupon = db.scalar(
            select(Coupon).where(func.upper(Coupon.code) == body.coupon_code.strip().upper())
        )
        if coupon is None:
            raise HTTPException(
                404,
                f"No coupon with code {body.coupon_code!r}; check out without coupon_code or use a valid one.",
            )
        problem = _coupon_problem(coupon, subtotal)
        if problem:
            raise HTTPException(409, f"Coupon {coupon.code} cannot be used: {problem}.")
        discount = subtotal * coupon.percent_off // 100
        coupon.times_used += 1
    order = Order(
        user_id=CURRENT_USER_ID,
        address_id=address.address_id,
        coupon_id=coupon.coupon_id if coupon else None,
        status="paid",
        subtotal_cents=subtotal,
        discount_cents=discount,
        total_cents=subtotal - discount,
        created_at=REFERENCE_TIME,
    )
    db.add(order)
    db.flush()
    for c in lines:
        p = db.get(Product, c.product_id)
        db.add(
            OrderItem(
                order_id=order.order_id,
                product_id=p.product_id,
                quantity=c.quantity,
                unit_price_cents=p.price_cents,
            )
        )
        p.stock -= c.quantity
        db.delete(c)
    db.commit()
    return _order_out(db, order)


# --------------------------------------------------------------------------- tools: orders


@app.get("/orders", operation_id="list_my_orders", response_model=OrderPage)
def list_my_orders(
    status: Literal["paid", "shipped", "delivered", "cancelled"] | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> OrderPage:
    """Your orders, newest first, optionally filtered by status; paginated."""
    offset = _parse_cursor(cursor)
    stmt = select(Order).where(Order.user_id == CURRENT_USER_ID)
    if status:
        stmt = stmt.where(Order.status == status)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Order.created_at.desc(), Order.order_id.desc()).offset(offset).limit(limit)
    )
    return OrderPage(
        items=[_order_summary(db, o) for o in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/orders/{order_id}", operation_id="get_order", response_model=OrderOut)
def get_order(order_id: int, db: Session = Depends(get_db)) -> OrderOut:
    """One of your orders with its items, amounts and returned quantities."""
    return _order_out(db, _my_order(db, order_id))


@app.post("/orders/{order_id}/cancel", operation_id="cancel_order", response_model=OrderOut)
def cancel_order(
    order_id: int,
    reason: str = Query(default="Cancelled by customer", max_length=200),
    db: Session = Depends(get_db),
) -> OrderOut:
    """Cancel an order that has not shipped yet; its items go back into stock."""
    order = _my_order(db, order_id)
    if order.status != "paid":
        hint = " Once delivered you can request a return." if order.status == "shipped" else ""
        raise HTTPException(
            409,
            f"Order {order_id} is {order.status} and can no longer be cancelled; only paid (unshipped) orders can.{hint}",
        )
    for item in db.scalars(select(OrderItem).where(OrderItem.order_id == order_id)):
        db.get(Product, item.product_id).stock += item.quantity
    if order.coupon_id:
        coupon = db.get(Coupon, order.coupon_id)
        coupon.times_used = max(0, coupon.times_used - 1)
    order.status = "cancelled"
    order.cancelled_at = REFERENCE_TIME
    order.cancel_reason = reason.strip() or "Cancelled by customer"
    db.commit()
    return _order_out(db, order)


@app.patch(
    "/orders/{order_id}/address", operation_id="update_order_address", response_model=OrderOut
)
def update_order_address(
    order_id: int, body: OrderAddressIn, db: Session = Depends(get_db)
) -> OrderOut:
    """Change where an unshipped order will be delivered."""
    order = _my_order(db, order_id)
    address = _my_address(db, body.address_id)
    if order.status != "paid":
        raise HTTPException(
            409,
            f"Order {order_id} is {order.status}; the address can only be changed before it ships.",
        )
    if order.address_id == address.address_id:
        raise HTTPException(409, f"Order {order_id} already ships to address {address.address_id}.")
    order.address_id = address.address_id
    db.commit()
    return _order_out(db, order)


# --------------------------------------------------------------------------- tools: returns


@app.post("/returns", operation_id="request_return", response_model=ReturnOut)
def request_return(body: ReturnIn, db: Session = Depends(get_db)) -> ReturnOut:
    """Request a return of delivered items, within 30 days of delivery."""
    order = _my_order(db, body.order_id)
    if order.status != "delivered" or not order.delivered_at:
        raise HTTPException(
            409, f"Order {order.order_id} is {order.status}; only delivered orders can be returned."
        )
    deadline = _ts(order.delivered_at) + timedelta(days=RETURN_WINDOW_DAYS)
    if _ts(REFERENCE_TIME) > deadline:
        raise HTTPException(
            409,
            f"The return window for order {order.order_id} closed on {deadline.strftime('%Y-%m-%dT%H:%M:%SZ')} ({RETURN_WINDOW_DAYS} days after delivery).",
        )
    item = db.scalar(
        select(OrderItem).where(
            OrderItem.order_id == order.order_id, OrderItem.product_id == body.product_id
        )
    )
    if item is None:
        ids = [
            i.product_id
            for i in db.scalars(select(OrderItem).where(OrderItem.order_id == order.order_id))
        ]
        raise HTTPException(
            404,
            f"Product {body.product_id} is not on order {order.order_id} (its product ids: {ids}).",
        )
    returnable = item.quantity - _returned_qty(db, item.order_item_id)
    if body.quantity > returnable:
        raise HTTPException(
            409,
            f"Only {returnable} of product {body.product_id} on order {order.order_id} can still be returned.",
        )
    ret = Return(
        order_item_id=item.order_item_id,
        quantity=body.quantity,
        reason=body.reason.strip(),
        status="requested",
        created_at=REFERENCE_TIME,
    )
    db.add(ret)
    db.commit()
    return _return_out(db, ret)


def _return_out(db: Session, r: Return) -> ReturnOut:
    item = db.get(OrderItem, r.order_item_id)
    product = db.get(Product, item.product_id)
    return ReturnOut(
        return_id=r.return_id,
        order_id=item.order_id,
        order_item_id=item.order_item_id,
        product_id=item.product_id,
        product_name=product.name,
        quantity=r.quantity,
        reason=r.reason,
        status=r.status,
        created_at=r.created_at,
    )


@app.get("/returns", operation_id="list_my_returns", response_model=ReturnList)
def list_my_returns(db: Session = Depends(get_db)) -> ReturnList:
    """Your return requests and their status."""
    rows = db.scalars(
        select(Return)
        .join(OrderItem, OrderItem.order_item_id == Return.order_item_id)
        .join(Order, Order.order_id == OrderItem.order_id)
        .where(Order.user_id == CURRENT_USER_ID)
        .order_by(Return.return_id)
    )
    items = [_return_out(db, r) for r in rows]
    return ReturnList(items=items, total=len(items))
