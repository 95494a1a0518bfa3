"""Online bookstore tools: catalogue search, orders from limited stock, reviews."""

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel
from sqlalchemy import ForeignKey, Integer, Float, String, create_engine, func, or_, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

REFERENCE_TIME = "2025-03-15T09:00:00"
USER_ID = 1

app = FastAPI(title="Online bookstore")


class Base(DeclarativeBase):
    pass


class Book(Base):
    __tablename__ = "books"
    book_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String)
    author: Mapped[str] = mapped_column(String)
    genre: Mapped[str] = mapped_column(String)
    price: Mapped[float] = mapped_column(Float)
    stock: Mapped[int] = mapped_column(Integer)


class Order(Base):
    __tablename__ = "orders"
    order_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    created_at: Mapped[str] = mapped_column(String)
    total: Mapped[float] = mapped_column(Float)
    items: Mapped[list["OrderItem"]] = relationship(order_by="OrderItem.order_item_id")


class OrderItem(Base):
    __tablename__ = "order_items"
    order_item_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.order_id"))
    book_id: Mapped[int] = mapped_column(ForeignKey("books.book_id"))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[float] = mapped_column(Float)


class Review(Base):
    __tablename__ = "reviews"
    review_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    book_id: Mapped[int] = mapped_column(ForeignKey("books.book_id"))
    user_id: Mapped[int] = mapped_column(Integer)
    rating: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(String)
    created_at: Mapped[str] = mapped_column(String)


def get_db():
    """Standalone: a local file database. Under awm the runtime overrides this dependency."""
    engine = create_engine("sqlite:///online_bookstore.db")
    with Session(engine) as db:
        yield db


class BookOut(BaseModel):
    book_id: int
    title: str
    author: str
    genre: str
    price: float
    stock: int


class BookPage(BaseModel):
    items: list[BookOut]
    total: int


class BookDetail(BookOut):
    average_rating: float | None = None


class OrderIn(BaseModel):
    book_id: int = Field(description="The book to order (see search_books).")
    quantity: int = Field(ge=1, le=20, description="Copies to order.")


class ItemOut(BaseModel):
    book_id: int
    quantity: int
    unit_price: float


class OrderOut(BaseModel):
    order_id: int
    status: str
    created_at: str
    total: float
    items: list[ItemOut]


class OrderPage(BaseModel):
    items: list[OrderOut]
    total: int


class ReviewIn(BaseModel):
    book_id: int
    rating: int = Field(ge=1, le=5, description="1 to 5 stars.")
    body: str = Field(min_length=1, max_length=2000)


class ReviewOut(BaseModel):
    review_id: int
    book_id: int
    rating: int
    body: str
    created_at: str


class ReviewPage(BaseModel):
    items: list[ReviewOut]
    total: int


def _book(db: Session, book_id: int) -> Book:
    book = db.get(Book, book_id)
    if book is None:
        raise HTTPException(404, f"book {book_id} not found; use search_books to find book ids")
    return book


def _my_order(db: Session, order_id: int) -> Order:
    order = db.get(Order, order_id)
    if order is None or order.user_id != USER_ID:
        raise HTTPException(404, f"you have no order {order_id}; use list_my_orders to see your orders")
    return order


def _order_out(order: Order) -> OrderOut:
    return OrderOut(
        order_id=order.order_id,
        status=order.status,
        created_at=order.created_at,
        total=round(order.total, 2),
        items=[ItemOut(book_id=i.book_id, quantity=i.quantity, unit_price=i.unit_price) for i in order.items],
    )


@app.get("/time", operation_id="get_current_time")
def get_current_time() -> dict:
    """The store's current date and time (ISO-8601); use it for anything relative to today."""
    return {"now": REFERENCE_TIME}


@app.get("/books", operation_id="search_books", response_model=BookPage)
def search_books(
    q: str | None = Query(None, description="Words in the title or author, case-insensitive."),
    genre: str | None = Query(None, description="fiction, science, historical, nature, mystery or cooking."),
    limit: int = Query(10, ge=1, le=50),
    offset: int = Query(0, ge=0),
    db: Session = Depends(get_db),
):
    """Search the catalogue by words in the title or author and by genre; paginated with limit and offset."""
    stmt = select(Book).order_by(Book.book_id)
    if q:
        stmt = stmt.where(or_(Book.title.ilike(f"%{q}%"), Book.author.ilike(f"%{q}%")))
    if genre:
        stmt = stmt.where(Book.genre == genre)
    books = db.scalars(stmt).all()
    page = books[offset : offset + limit]
    return BookPage(items=[BookOut.model_validate(b, from_attributes=True) for b in page], total=len(books))


@app.get("/books/{book_id}", operation_id="get_book", response_model=BookDetail)
def get_book(book_id: int, db: Session = Depends(get_db)):
    """One book with its price, stock and average rating."""
    book = _book(db, book_id)
    avg = db.scalar(select(func.avg(Review.rating)).where(Review.book_id == book_id))
    detail = BookDetail.model_validate(book, from_attributes=True)
    detail.average_rating = round(avg, 2) if avg is not None else None
    return detail


@app.post("/orders", operation_id="create_order", response_model=OrderOut)
def create_order(body: OrderIn, db: Session = Depends(get_db)):
    """Order copies of one book for the signed-in customer; fails when the stock is too low."""
    book = _book(db, body.book_id)
    if book.stock < body.quantity:
        raise HTTPException(
            409, f"'{book.title}' has only {book.stock} copies in stock; order at most {book.stock}"
        )
    book.stock -= body.quantity
    order = Order(user_id=USER_ID, status="pending", created_at=REFERENCE_TIME, total=round(book.price * body.quantity, 2))
    db.add(order)
    db.flush()
    db.add(OrderItem(order_id=order.order_id, book_id=book.book_id, quantity=body.quantity, unit_price=book.price))
    db.commit()
    db.refresh(order)
    return _order_out(order)


@app.get("/orders", operation_id="list_my_orders", response_model=OrderPage)
def list_my_orders(
    status: str | None = Query(None, description="pending, shipped or cancelled."),
    limit: int = Query(10, ge=1, le=50),
    offset: int = Query(0, ge=0),
    db: Session = Depends(get_db),
):
    """The signed-in customer's orders, newest first, optionally filtered by status."""
    if status is not None and status not in ("pending", "shipped", "cancelled"):
        raise HTTPException(400, f"unknown status {status!r}; use pending, shipped or cancelled")
    stmt = select(Order).where(Order.user_id == USER_ID).order_by(Order.created_at.desc())
    if status:
        stmt = stmt.where(Order.status == status)
    orders = db.scalars(stmt).all()
    return OrderPage(items=[_order_out(o) for o in orders[offset : offset + limit]], total=len(orders))


@app.get("/orders/{order_id}", operation_id="get_order", response_model=OrderOut)
def get_order(order_id: int, db: Session = Depends(get_db)):
    """One of the signed-in customer's orders with its items and status."""
    return _order_out(_my_order(db, order_id))


@app.post("/orders/{order_id}/cancel", operation_id="cancel_order", response_model=OrderOut)
def cancel_order(order_id: int, db: Session = Depends(get_db)):
    """Cancel a pending order of the signed-in customer and return its copies to stock."""
    order = _my_order(db, order_id)
    if order.status != "pending":
        raise HTTPException(409, f"order {order_id} is {order.status}; only pending orders can be cancelled")
    for item in order.items:
        db.get(Book, item.book_id).stock += item.quantity
    order.status = "cancelled"
    db.commit()
    db.refresh(order)
    return _order_out(order)


@app.post("/reviews", operation_id="add_review", response_model=ReviewOut)
def add_review(body: ReviewIn, db: Session = Depends(get_db)):
    """Review a book as the signed-in customer (one review per book, rating 1-5)."""
    book = _book(db, body.book_id)
    existing = db.scalar(select(Review).where(Review.book_id == book.book_id, Review.user_id == USER_ID))
    if existing is not None:
        raise HTTPException(409, f"you already reviewed '{book.title}' (review {existing.review_id})")
    review = Review(book_id=book.book_id, user_id=USER_ID, rating=body.rating, body=body.body.strip(), created_at=REFERENCE_TIME)
    db.add(review)
    db.commit()
    db.refresh(review)
    return ReviewOut.model_validate(review, from_attributes=True)


@app.get("/books/{book_id}/reviews", operation_id="list_reviews", response_model=ReviewPage)
def list_reviews(book_id: int, db: Session = Depends(get_db)):
    """Reviews of one book, newest first."""
    _book(db, book_id)
    reviews = db.scalars(select(Review).where(Review.book_id == book_id).order_by(Review.created_at.desc())).all()
    return ReviewPage(items=[ReviewOut.model_validate(r, from_attributes=True) for r in reviews], total=len(reviews))
