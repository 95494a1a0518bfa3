"""Personal banking: accounts and transactions, transfers and payees, cards, budgets,
disputes and alerts. The logged-in customer is customer 1 (Daniel Okoro).

Money is integer cents; a credit account's negative balance is what is owed.
Times are ISO-8601 UTC. "Now" is REFERENCE_TIME.
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

REFERENCE_TIME = "2025-06-20T09:00:00Z"
CURRENT_CUSTOMER_ID = 1
PAYEE_PAYMENT_LIMIT_CENTS = 500_000
DISPUTE_WINDOW_DAYS = 60
MAX_PAGE = 50
CATEGORIES = (
    "income",
    "housing",
    "groceries",
    "dining",
    "coffee",
    "transport",
    "utilities",
    "subscriptions",
    "shopping",
    "travel",
    "entertainment",
    "health",
    "transfer",
)
Category = Literal[
    "income",
    "housing",
    "groceries",
    "dining",
    "coffee",
    "transport",
    "utilities",
    "subscriptions",
    "shopping",
    "travel",
    "entertainment",
    "health",
    "transfer",
]


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


class Account(Base):
    __tablename__ = "accounts"
    account_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    account_number: Mapped[str]
    type: Mapped[str]
    nickname: Mapped[str]
    balance_cents: Mapped[int]
    credit_limit_cents: Mapped[int]
    status: Mapped[str]
    opened_at: Mapped[str]


class Payee(Base):
    __tablename__ = "payees"
    payee_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    name: Mapped[str]
    account_number: Mapped[str]
    bank_name: Mapped[str]
    created_at: Mapped[str]


class Transfer(Base):
    __tablename__ = "transfers"
    transfer_id: Mapped[int] = mapped_column(primary_key=True)
    from_account_id: Mapped[int] = mapped_column(ForeignKey("accounts.account_id"))
    to_account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.account_id"))
    payee_id: Mapped[int | None] = mapped_column(ForeignKey("payees.payee_id"))
    amount_cents: Mapped[int]
    memo: Mapped[str]
    status: Mapped[str]
    scheduled_for: Mapped[str | None]
    created_at: Mapped[str]


class Transaction(Base):
    __tablename__ = "transactions"
    transaction_id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.account_id"))
    transfer_id: Mapped[int | None] = mapped_column(ForeignKey("transfers.transfer_id"))
    posted_at: Mapped[str]
    amount_cents: Mapped[int]
    merchant: Mapped[str]
    category: Mapped[str]
    description: Mapped[str]


class Card(Base):
    __tablename__ = "cards"
    card_id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.account_id"))
    last4: Mapped[str]
    type: Mapped[str]
    status: Mapped[str]
    expires: Mapped[str]
    daily_limit_cents: Mapped[int]
    replaces_card_id: Mapped[int | None] = mapped_column(ForeignKey("cards.card_id"))


class Budget(Base):
    __tablename__ = "budgets"
    budget_id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.customer_id"))
    category: Mapped[str]
    monthly_limit_cents: Mapped[int]


class Dispute(Base):
    __tablename__ = "disputes"
    dispute_id: Mapped[int] = mapped_column(primary_key=True)
    transaction_id: Mapped[int] = mapped_column(ForeignKey("transactions.transaction_id"))
    reason: Mapped[str]
    status: Mapped[str]
    created_at: Mapped[str]


class Alert(Base):
    __tablename__ = "alerts"
    alert_id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.account_id"))
    kind: Mapped[str]
    threshold_cents: Mapped[int]
    is_enabled: Mapped[int]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only for serving the app on its own; the awm runtime overrides get_db.
    return create_engine(f"sqlite:///{os.environ.get('BANK_DB', 'bank.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Bank",
    description="Personal banking for the logged-in customer (customer 1). Amounts are integer cents.",
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
    customer_since: str


class AccountOut(BaseModel):
    account_id: int
    account_number: str
    type: str
    nickname: str
    balance_cents: int
    credit_limit_cents: int
    available_cents: int
    status: str
    opened_at: str


class AccountList(BaseModel):
    items: list[AccountOut]
    total: int


class TransactionOut(BaseModel):
    transaction_id: int
    account_id: int
    posted_at: str
    amount_cents: int
    merchant: str
    category: str
    description: str
    transfer_id: int | None
    dispute_status: str | None


class TransactionPage(BaseModel):
    items: list[TransactionOut]
    total: int
    next_cursor: str | None


class CategoryTotal(BaseModel):
    category: str
    spent_cents: int
    transactions: int
    budget_cents: int | None


class SpendingSummaryOut(BaseModel):
    month: str
    items: list[CategoryTotal]
    total: int
    total_spent_cents: int


class PayeeOut(BaseModel):
    payee_id: int
    name: str
    account_number: str
    bank_name: str
    created_at: str


class PayeeList(BaseModel):
    items: list[PayeeOut]
    total: int


class PayeeIn(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    account_number: str = Field(pattern=r"^\d{6,17}$", description="6-17 digits")
    bank_name: str = Field(min_length=1, max_length=80)


class TransferOut(BaseModel):
    transfer_id: int
    from_account_id: int
    to_account_id: int | None
    payee_id: int | None
    payee_name: str | None
    amount_cents: int
    memo: str
    status: str
    scheduled_for: str | None
    created_at: str


class TransferList(BaseModel):
    items: list[TransferOut]
    total: int


class InternalTransferIn(BaseModel):
    from_account_id: int
    to_account_id: int
    amount_cents: int = Field(gt=0)
    memo: str = Field(default="", max_length=140)


class PayeePaymentIn(BaseModel):
    from_account_id: int
    payee_id: int
    amount_cents: int = Field(gt=0)
    memo: str = Field(default="", max_length=140)
    scheduled_for: str | None = Field(
        default=None, description="ISO-8601 date or time in the future to schedule; omit to pay now"
    )


class CardOut(BaseModel):
    card_id: int
    account_id: int
    last4: str
    type: str
    status: str
    expires: str
    daily_limit_cents: int
    replaces_card_id: int | None


class CardList(BaseModel):
    items: list[CardOut]
    total: int


class CardLimitIn(BaseModel):
    daily_limit_cents: int = Field(gt=0)


class LostCardOut(BaseModel):
    reported_card: CardOut
    replacement_card: CardOut


class BudgetOut(BaseModel):
    budget_id: int
    category: str
    monthly_limit_cents: int


class BudgetList(BaseModel):
    items: list[BudgetOut]
    total: int


class BudgetIn(BaseModel):
    category: Category
    monthly_limit_cents: int = Field(gt=0)


class DisputeIn(BaseModel):
    transaction_id: int
    reason: str = Field(min_length=3, max_length=300)


class DisputeOut(BaseModel):
    dispute_id: int
    transaction_id: int
    account_id: int
    merchant: str
    amount_cents: int
    reason: str
    status: str
    created_at: str


class DisputeList(BaseModel):
    items: list[DisputeOut]
    total: int


class AlertOut(BaseModel):
    alert_id: int
    account_id: int
    kind: str
    threshold_cents: int
    is_enabled: bool


class AlertList(BaseModel):
    items: list[AlertOut]
    total: int


class AlertIn(BaseModel):
    account_id: int
    kind: Literal["low_balance", "large_transaction"]
    threshold_cents: int = Field(gt=0)
    is_enabled: bool = True


# --------------------------------------------------------------------------- helpers


def _ts(value: str) -> datetime:
    value = value.strip()
    if len(value) == 10:
        value += "T00:00:00"
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed.replace(tzinfo=None) if parsed.tzinfo else parsed


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


def _my_account_ids(db: Session) -> list[int]:
    return list(
        db.scalars(select(Account.account_id).where(Account.customer_id == CURRENT_CUSTOMER_ID))
    )


def _my_account(db: Session, account_id: int) -> Account:
    account = db.get(Account, account_id)
    if account is None or account.customer_id != CURRENT_CUSTOMER_ID:
        raise HTTPException(
            404,
            f"Account {account_id} is not one of your accounts; your account ids: {_my_account_ids(db)}.",
        )
    return account


def _account_out(a: Account) -> AccountOut:
    available = a.credit_limit_cents + a.balance_cents if a.type == "credit" else a.balance_cents
    return AccountOut(
        account_id=a.account_id,
        account_number=a.account_number,
        type=a.type,
        nickname=a.nickname,
        balance_cents=a.balance_cents,
        credit_limit_cents=a.credit_limit_cents,
        available_cents=max(0, available) if a.status == "active" else 0,
        status=a.status,
        opened_at=a.opened_at,
    )


def _dispute_status(db: Session, transaction_id: int) -> str | None:
    return db.scalar(
        select(Dispute.status)
        .where(Dispute.transaction_id == transaction_id)
        .order_by(Dispute.dispute_id.desc())
    )


def _txn_out(db: Session, t: Transaction) -> TransactionOut:
    return TransactionOut(
        transaction_id=t.transaction_id,
        account_id=t.account_id,
        posted_at=t.posted_at,
        amount_cents=t.amount_cents,
        merchant=t.merchant,
        category=t.category,
        description=t.description,
        transfer_id=t.transfer_id,
        dispute_status=_dispute_status(db, t.transaction_id),
    )


def _my_payee(db: Session, payee_id: int) -> Payee:
    payee = db.get(Payee, payee_id)
    if payee is None or payee.customer_id != CURRENT_CUSTOMER_ID:
        ids = list(
            db.scalars(select(Payee.payee_id).where(Payee.customer_id == CURRENT_CUSTOMER_ID))
        )
        raise HTTPException(
            404,
            f"Payee {payee_id} is not one of your payees (your payee ids: {ids}); add it with add_payee.",
        )
    return payee


def _transfer_out(db: Session, t: Transfer) -> TransferOut:
    payee = db.get(Payee, t.payee_id) if t.payee_id else None
    return TransferOut(
        transfer_id=t.transfer_id,
        from_account_id=t.from_account_id,
        to_account_id=t.to_account_id,
        payee_id=t.payee_id,
        payee_name=payee.name if payee else None,
        amount_cents=t.amount_cents,
        memo=t.memo,
        status=t.status,
        scheduled_for=t.scheduled_for,
        created_at=t.created_at,
    )


def _check_debit(account: Account, amount: int) -> None:
    if account.status != "active":
        raise HTTPException(
            409, f"Account {account.account_id} is {account.status}; money cannot leave it."
        )
    if account.type == "credit":
        raise HTTPException(
            403,
            "Cash advances from a credit account are not supported; pay from checking or savings.",
        )
    if amount > account.balance_cents:
        raise HTTPException(
            409,
            f"Insufficient funds: account {account.account_id} ({account.nickname}) has {account.balance_cents} cents; "
            f"you asked to send {amount}.",
        )


def _my_card(db: Session, card_id: int) -> Card:
    card = db.get(Card, card_id)
    if card is None or card.account_id not in _my_account_ids(db):
        mine = list(
            db.scalars(select(Card.card_id).where(Card.account_id.in_(_my_account_ids(db))))
        )
        raise HTTPException(404, f"Card {card_id} is not one of your cards; your card ids: {mine}.")
    return card


def _card_out(c: Card) -> CardOut:
    return CardOut(
        card_id=c.card_id,
        account_id=c.account_id,
        last4=c.last4,
        type=c.type,
        status=c.status,
        expires=c.expires,
        daily_limit_cents=c.daily_limit_cents,
        replaces_card_id=c.replaces_card_id,
    )


def _dispute_out(db: Session, d: Dispute) -> DisputeOut:
    t = db.get(Transaction, d.transaction_id)
    return DisputeOut(
        dispute_id=d.dispute_id,
        transaction_id=d.transaction_id,
        account_id=t.account_id,
        merchant=t.merchant,
        amount_cents=t.amount_cents,
        reason=d.reason,
        status=d.status,
        created_at=d.created_at,
    )


# --------------------------------------------------------------------------- tools: profile and accounts


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The bank's current date and time (UTC); use it for 'today', 'this month' and scheduling."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """The logged-in customer's profile."""
    c = db.get(Customer, CURRENT_CUSTOMER_ID)
    return ProfileOut(
        customer_id=c.customer_id,
        name=c.name,
        email=c.email,
        phone=c.phone,
        customer_since=c.created_at,
    )


@app.get("/accounts", operation_id="list_accounts", response_model=AccountList)
def list_accounts(include_closed: bool = False, db: Session = Depends(get_db)) -> AccountList:
    """Your accounts with balances (credit accounts: negative balance = amount owed)."""
    stmt = select(Account).where(Account.customer_id == CURRENT_CUSTOMER_ID)
    if not include_closed:
        stmt = stmt.where(Account.status != "closed")
    items = [_account_out(a) for a in db.scalars(stmt.order_by(Account.account_id))]
    return AccountList(items=items, total=len(items))


@app.get("/accounts/{account_id}", operation_id="get_account", response_model=AccountOut)
def get_account(account_id: int, db: Session = Depends(get_db)) -> AccountOut:
    """One of your accounts."""
    return _account_out(_my_account(db, account_id))


# --------------------------------------------------------------------------- tools: transactions


@app.get(
    "/accounts/{account_id}/transactions",
    operation_id="list_transactions",
    response_model=TransactionPage,
)
def list_transactions(
    account_id: int,
    start_date: str | None = Query(default=None, description="Inclusive, YYYY-MM-DD"),
    end_date: str | None = Query(default=None, description="Inclusive, YYYY-MM-DD"),
    merchant: str | None = Query(
        default=None, description="Case-insensitive substring of the merchant"
    ),
    category: Category | None = None,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> TransactionPage:
    """Transactions of one of your accounts, newest first, with filters; paginated."""
    _my_account(db, account_id)
    offset = _parse_cursor(cursor)
    stmt = select(Transaction).where(Transaction.account_id == account_id)
    try:
        if start_date:
            stmt = stmt.where(Transaction.posted_at >= _iso(_ts(start_date)))
        if end_date:
            stmt = stmt.where(Transaction.posted_at < _iso(_ts(end_date) + timedelta(days=1)))
    except ValueError as exc:
        raise HTTPException(400, f"Dates must be YYYY-MM-DD: {exc}") from exc
    if merchant:
        stmt = stmt.where(func.lower(Transaction.merchant).like(f"%{merchant.strip().lower()}%"))
    if category:
        stmt = stmt.where(Transaction.category == category)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Transaction.posted_at.desc(), Transaction.transaction_id.desc())
        .offset(offset)
        .limit(limit)
    )
    return TransactionPage(
        items=[_txn_out(db, t) for t in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get(
    "/transactions/{transaction_id}", operation_id="get_transaction", response_model=TransactionOut
)
def get_transaction(transaction_id: int, db: Session = Depends(get_db)) -> TransactionOut:
    """One transaction on one of your accounts."""
    t = db.get(Transaction, transaction_id)
    if t is None or t.account_id not in _my_account_ids(db):
        raise HTTPException(
            404, f"Transaction {transaction_id} not found on your accounts; use list_transactions."
        )
    return _txn_out(db, t)


@app.get("/spending/{month}", operation_id="spending_summary", response_model=SpendingSummaryOut)
def spending_summary(
    month: str,
    account_id: int | None = Query(default=None, description="Default: all your accounts"),
    db: Session = Depends(get_db),
) -> SpendingSummaryOut:
    """Money spent per category in a month (YYYY-MM), excluding transfers, with your budgets."""
    try:
        start = datetime.strptime(month, "%Y-%m")
    except ValueError as exc:
        raise HTTPException(400, f"month must be YYYY-MM, got {month!r}") from exc
    end = (start + timedelta(days=32)).replace(day=1)
    ids = (
        [_my_account(db, account_id).account_id] if account_id is not None else _my_account_ids(db)
    )
    rows = db.execute(
        select(Transaction.category, func.sum(Transaction.amount_cents), func.count())
        .where(
            Transaction.account_id.in_(ids),
            Transaction.amount_cents < 0,
            Transaction.category != "transfer",
            Transaction.posted_at >= _iso(start),
            Transaction.posted_at < _iso(end),
        )
        .group_by(Transaction.category)
        .order_by(Transaction.category)
    ).all()
    budgets = {
        b.category: b.monthly_limit_cents
        for b in db.scalars(select(Budget).where(Budget.customer_id == CURRENT_CUSTOMER_ID))
    }
    items = [
        CategoryTotal(category=c, spent_cents=-s, transactions=n, budget_cents=budgets.get(c))
        for c, s, n in rows
    ]
    return SpendingSummaryOut(
        month=month,
        items=items,
        total=len(items),
        total_spent_cents=sum(i.spent_cents for i in items),
    )


# --------------------------------------------------------------------------- tools: payees and transfers


@app.get("/payees", operation_id="list_payees", response_model=PayeeList)
def list_payees(db: Session = Depends(get_db)) -> PayeeList:
    """People and companies you can pay."""
    rows = db.scalars(
        select(Payee).where(Payee.customer_id == CURRENT_CUSTOMER_ID).order_by(Payee.payee_id)
    )
    items = [
        PayeeOut(
            payee_id=p.payee_id,
            name=p.name,
            account_number=p.account_number,
            bank_name=p.bank_name,
            created_at=p.created_at,
        )
        for p in rows
    ]
    return PayeeList(items=items, total=len(items))


@app.post("/payees", operation_id="add_payee", response_model=PayeeOut)
def add_payee(body: PayeeIn, db: Session = Depends(get_db)) -> PayeeOut:
    """Save a new payee (name, account number, bank)."""
    existing = db.scalar(
        select(Payee).where(
            Payee.customer_id == CURRENT_CUSTOMER_ID, Payee.account_number == body.account_number
        )
    )
    if existing:
        raise HTTPException(
            409,
            f"Account {body.account_number} is already saved as payee {existing.payee_id} ({existing.name}).",
        )
    payee = Payee(
        customer_id=CURRENT_CUSTOMER_ID,
        name=body.name.strip(),
        account_number=body.account_number,
        bank_name=body.bank_name.strip(),
        created_at=REFERENCE_TIME,
    )
    db.add(payee)
    db.commit()
    return PayeeOut(
        payee_id=payee.payee_id,
        name=payee.name,
        account_number=payee.account_number,
        bank_name=payee.bank_name,
        created_at=payee.created_at,
    )


@app.delete("/payees/{payee_id}", operation_id="delete_payee", response_model=PayeeOut)
def delete_payee(payee_id: int, db: Session = Depends(get_db)) -> PayeeOut:
    """Remove a payee that has no scheduled payments."""
    payee = _my_payee(db, payee_id)
    scheduled = list(
        db.scalars(
            select(Transfer.transfer_id).where(
                Transfer.payee_id == payee_id, Transfer.status == "scheduled"
            )
        )
    )
    if scheduled:
        raise HTTPException(
            409,
            f"Payee {payee_id} has scheduled payments {scheduled}; cancel them with cancel_scheduled_transfer first.",
        )
    if db.scalar(select(func.count()).select_from(Transfer).where(Transfer.payee_id == payee_id)):
        # keep history intact: past payments reference the payee
        raise HTTPException(
            409,
            f"Payee {payee_id} ({payee.name}) has past payments on record and cannot be deleted.",
        )
    out = PayeeOut(
        payee_id=payee.payee_id,
        name=payee.name,
        account_number=payee.account_number,
        bank_name=payee.bank_name,
        created_at=payee.created_at,
    )
    db.delete(payee)
    db.commit()
    return out


@app.post(
    "/transfers/internal", operation_id="transfer_between_accounts", response_model=TransferOut
)
def transfer_between_accounts(
    body: InternalTransferIn, db: Session = Depends(get_db)
) -> TransferOut:
    """Move money now between two of your accounts (paying a credit account reduces what you owe)."""
    if body.from_account_id == body.to_account_id:
        raise HTTPException(400, "from_account_id and to_account_id are the same account.")
    src = _my_account(db, body.from_account_id)
    dst = _my_account(db, body.to_account_id)
    _check_debit(src, body.amount_cents)
    if dst.status != "active":
        raise HTTPException(
            409, f"Account {dst.account_id} is {dst.status}; it cannot receive money."
        )
    if dst.type == "credit" and body.amount_cents > -dst.balance_cents:
        raise HTTPException(
            409,
            f"You owe {max(0, -dst.balance_cents)} cents on account {dst.account_id}; a payment cannot exceed that.",
        )
    transfer = Transfer(
        from_account_id=src.account_id,
        to_account_id=dst.account_id,
        amount_cents=body.amount_cents,
        memo=body.memo.strip(),
        status="completed",
        created_at=REFERENCE_TIME,
    )
    db.add(transfer)
    db.flush()
    src.balance_cents -= body.amount_cents
    dst.balance_cents += body.amount_cents
    db.add(
        Transaction(
            account_id=src.account_id,
            transfer_id=transfer.transfer_id,
            posted_at=REFERENCE_TIME,
            amount_cents=-body.amount_cents,
            merchant=f"Transfer to {dst.nickname}",
            category="transfer",
            description=transfer.memo,
        )
    )
    db.add(
        Transaction(
            account_id=dst.account_id,
            transfer_id=transfer.transfer_id,
            posted_at=REFERENCE_TIME,
            amount_cents=body.amount_cents,
            merchant=f"Transfer from {src.nickname}",
            category="transfer",
            description=transfer.memo,
        )
    )
    db.commit()
    return _transfer_out(db, transfer)


@app.post("/transfers/payee", operation_id="pay_payee", response_model=TransferOut)
def pay_payee(body: PayeePaymentIn, db: Session = Depends(get_db)) -> TransferOut:
    """Pay one of your payees now, or schedule the payment for a future date (max $5,000.00 per payment)."""
    src = _my_account(db, body.from_account_id)
    payee = _my_payee(db, body.payee_id)
    if body.amount_cents > PAYEE_PAYMENT_LIMIT_CENTS:
        raise HTTPException(
            400,
            f"{body.amount_cents} cents exceeds the per-payment limit of {PAYEE_PAYMENT_LIMIT_CENTS} cents.",
        )
    when = None
    if body.scheduled_for:
        try:
            when = _ts(body.scheduled_for)
        except ValueError as exc:
            raise HTTPException(
                400, f"scheduled_for must be an ISO-8601 date or time: {exc}"
            ) from exc
        if when <= _now():
            raise HTTPException(
                400,
                f"scheduled_for must be after the current time {REFERENCE_TIME}; omit it to pay now.",
            )
        if when > _now() + timedelta(days=365):
            raise HTTPException(400, "Payments can be scheduled at most 365 days ahead.")
        if src.status != "active" or src.type == "credit":
            _check_debit(src, 0)
    else:
        _check_debit(src, body.amount_cents)
    transfer = Transfer(
        from_account_id=src.account_id,
        payee_id=payee.payee_id,
        amount_cents=body.amount_cents,
        memo=body.memo.strip(),
        status="scheduled" if when else "completed",
        scheduled_for=_iso(when) if when else None,
        created_at=REFERENCE_TIME,
    )
    db.add(transfer)
    db.flush()
    if when is None:
        src.balance_cents -= body.amount_cents
        db.add(
            Transaction(
                account_id=src.account_id,
                transfer_id=transfer.transfer_id,
                posted_at=REFERENCE_TIME,
                amount_cents=-body.amount_cents,
                merchant=payee.name,
                category="transfer",
                description=transfer.memo,
            )
        )
    db.commit()
    return _transfer_out(db, transfer)


@app.get(
    "/transfers/scheduled", operation_id="list_scheduled_transfers", response_model=TransferList
)
def list_scheduled_transfers(db: Session = Depends(get_db)) -> TransferList:
    """Your transfers and payments scheduled for the future, soonest first."""
    rows = db.scalars(
        select(Transfer)
        .where(Transfer.from_account_id.in_(_my_account_ids(db)), Transfer.status == "scheduled")
        .order_by(Transfer.scheduled_for, Transfer.transfer_id)
    )
    items = [_transfer_out(db, t) for t in rows]
    return TransferList(items=items, total=len(items))


@app.post(
    "/transfers/{transfer_id}/cancel",
    operation_id="cancel_scheduled_transfer",
    response_model=TransferOut,
)
def cancel_scheduled_transfer(transfer_id: int, db: Session = Depends(get_db)) -> TransferOut:
    """Cancel a scheduled transfer or payment before it runs."""
    t = db.get(Transfer, transfer_id)
    if t is None or t.from_account_id not in _my_account_ids(db):
        raise HTTPException(
            404, f"Transfer {transfer_id} not found among yours; use list_scheduled_transfers."
        )
    if t.status != "scheduled":
        raise HTTPException(
            409, f"Transfer {transfer_id} is {t.status}; only scheduled transfers can be cancelled."
        )
    t.status = "cancelled"
    db.commit()
    return _transfer_out(db, t)


# --------------------------------------------------------------------------- tools: cards


@app.get("/cards", operation_id="list_cards", response_model=CardList)
def list_cards(db: Session = Depends(get_db)) -> CardList:
    """Your debit and credit cards."""
    rows = db.scalars(
        select(Card).where(Card.account_id.in_(_my_account_ids(db))).order_by(Card.card_id)
    )
    items = [_card_out(c) for c in rows]
    return CardList(items=items, total=len(items))


@app.post("/cards/{card_id}/lock", operation_id="lock_card", response_model=CardOut)
def lock_card(card_id: int, db: Session = Depends(get_db)) -> CardOut:
    """Temporarily lock an active card (unlock it later with unlock_card)."""
    card = _my_card(db, card_id)
    if card.status != "active":
        raise HTTPException(
            409, f"Card {card_id} is {card.status}; only active cards can be locked."
        )
    card.status = "locked"
    db.commit()
    return _card_out(card)


@app.post("/cards/{card_id}/unlock", operation_id="unlock_card", response_model=CardOut)
def unlock_card(card_id: int, db: Session = Depends(get_db)) -> CardOut:
    """Unlock a locked card."""
    card = _my_card(db, card_id)
    if card.status != "locked":
        raise HTTPException(
            409, f"Card {card_id} is {card.status}; only locked cards can be unlocked."
        )
    card.status = "active"
    db.commit()
    return _card_out(card)


@app.post(
    "/cards/{card_id}/report-lost", operation_id="report_card_lost", response_model=LostCardOut
)
def report_card_lost(card_id: int, db: Session = Depends(get_db)) -> LostCardOut:
    """Report a card lost or stolen: it is blocked for good and a replacement is issued on the same account."""
    card = _my_card(db, card_id)
    if card.status not in ("active", "locked"):
        raise HTTPException(
            409,
            f"Card {card_id} is {card.status}; only active or locked cards can be reported lost.",
        )
    card.status = "reported_lost"
    replacement = Card(
        account_id=card.account_id,
        last4=f"{(card.card_id * 7919 + 1234) % 10000:04d}",
        type=card.type,
        status="active",
        expires=f"{_now().year + 4}-{_now().month:02d}",
        daily_limit_cents=card.daily_limit_cents,
        replaces_card_id=card.card_id,
    )
    db.add(replacement)
    db.commit()
    return LostCardOut(reported_card=_card_out(card), replacement_card=_card_out(replacement))


@app.patch("/cards/{card_id}/limit", operation_id="set_card_daily_limit", response_model=CardOut)
def set_card_daily_limit(card_id: int, body: CardLimitIn, db: Session = Depends(get_db)) -> CardOut:
    """Change a card's daily spending limit (debit up to 500000 cents, credit up to 1000000)."""
    card = _my_card(db, card_id)
    if card.status not in ("active", "locked"):
        raise HTTPException(409, f"Card {card_id} is {card.status}; its limit cannot be changed.")
    cap = 500_000 if card.type == "debit" else 1_000_000
    if body.daily_limit_cents > cap:
        raise HTTPException(
            400, f"The daily limit of a {card.type} card can be at most {cap} cents."
        )
    card.daily_limit_cents = body.daily_limit_cents
    db.commit()
    return _card_out(card)


# --------------------------------------------------------------------------- tools: budgets


def _budgets(db: Session) -> BudgetList:
    rows = db.scalars(
        select(Budget).where(Budget.customer_id == CURRENT_CUSTOMER_ID).order_by(Budget.category)
    )
    items = [
        BudgetOut(
            budget_id=b.budget_id, category=b.category, monthly_limit_cents=b.monthly_limit_cents
        )
        for b in rows
    ]
    return BudgetList(items=items, total=len(items))


@app.get("/budgets", operation_id="list_budgets", response_model=BudgetList)
def list_budgets(db: Session = Depends(get_db)) -> BudgetList:
    """Your monthly budgets per spending category."""
    return _budgets(db)


@app.put("/budgets", operation_id="set_budget", response_model=BudgetList)
def set_budget(body: BudgetIn, db: Session = Depends(get_db)) -> BudgetList:
    """Create or change the monthly budget of a category."""
    if body.category in ("income", "transfer"):
        raise HTTPException(
            400,
            f"'{body.category}' is not a spending category; budgets apply to: "
            f"{', '.join(c for c in CATEGORIES if c not in ('income', 'transfer'))}.",
        )
    b = db.scalar(
        select(Budget).where(
            Budget.customer_id == CURRENT_CUSTOMER_ID, Budget.category == body.category
        )
    )
    if b:
        b.monthly_limit_cents = body.monthly_limit_cents
    else:
        db.add(
            Budget(
                customer_id=CURRENT_CUSTOMER_ID,
                category=body.category,
                monthly_limit_cents=body.monthly_limit_cents,
            )
        )
    db.commit()
    return _budgets(db)


@app.delete("/budgets/{category}", operation_id="delete_budget", response_model=BudgetList)
def delete_budget(category: str, db: Session = Depends(get_db)) -> BudgetList:
    """Remove the budget of a category."""
    b = db.scalar(
        select(Budget).where(Budget.customer_id == CURRENT_CUSTOMER_ID, Budget.category == category)
    )
    if b is None:
        have = [x.category for x in _budgets(db).items]
        raise HTTPException(404, f"You have no budget for {category!r}; your budgets: {have}.")
    db.delete(b)
    db.commit()
    return _budgets(db)


# --------------------------------------------------------------------------- tools: disputes and alerts


@app.post("/disputes", operation_id="open_dispute", response_model=DisputeOut)
def open_dispute(body: DisputeIn, db: Session = Depends(get_db)) -> DisputeOut:
    """Dispute a card or merchant charge posted in the last 60 days."""
    t = db.get(Transaction, body.transaction_id)
    if t is None or t.account_id not in _my_account_ids(db):
        raise HTTPException(
            404,
            f"Transaction {body.transaction_id} not found on your accounts; use list_transactions.",
        )
    if t.amount_cents >= 0:
        raise HTTPException(
            409,
            f"Transaction {t.transaction_id} is a credit of {t.amount_cents} cents; only charges can be disputed.",
        )
    if t.category == "transfer":
        raise HTTPException(
            409,
            f"Transaction {t.transaction_id} is a transfer you made; transfers cannot be disputed.",
        )
    if _now() - _ts(t.posted_at) > timedelta(days=DISPUTE_WINDOW_DAYS):
        raise HTTPException(
            409,
            f"Transaction {t.transaction_id} posted {t.posted_at}, more than {DISPUTE_WINDOW_DAYS} days ago; it can no longer be disputed.",
        )
    existing = db.scalar(
        select(Dispute).where(
            Dispute.transaction_id == t.transaction_id, Dispute.status != "rejected"
        )
    )
    if existing:
        raise HTTPException(
            409,
            f"Transaction {t.transaction_id} already has dispute {existing.dispute_id} ({existing.status}).",
        )
    d = Dispute(
        transaction_id=t.transaction_id,
        reason=body.reason.strip(),
        status="open",
        created_at=REFERENCE_TIME,
    )
    db.add(d)
    db.commit()
    return _dispute_out(db, d)


@app.get("/disputes", operation_id="list_disputes", response_model=DisputeList)
def list_disputes(db: Session = Depends(get_db)) -> DisputeList:
    """Your disputes and their status."""
    rows = db.scalars(
        select(Dispute)
        .join(Transaction, Transaction.transaction_id == Dispute.transaction_id)
        .where(Transaction.account_id.in_(_my_account_ids(db)))
        .order_by(Dispute.dispute_id)
    )
    items = [_dispute_out(db, d) for d in rows]
    return DisputeList(items=items, total=len(items))


def _alert_out(a: Alert) -> AlertOut:
    return AlertOut(
        alert_id=a.alert_id,
        account_id=a.account_id,
        kind=a.kind,
        threshold_cents=a.threshold_cents,
        is_enabled=bool(a.is_enabled),
    )


@app.get("/alerts", operation_id="list_alerts", response_model=AlertList)
def list_alerts(db: Session = Depends(get_db)) -> AlertList:
    """Your balance and large-transaction alerts."""
    rows = db.scalars(
        select(Alert).where(Alert.account_id.in_(_my_account_ids(db))).order_by(Alert.alert_id)
    )
    items = [_alert_out(a) for a in rows]
    return AlertList(items=items, total=len(items))


@app.put("/alerts", operation_id="set_alert", response_model=AlertOut)
def set_alert(body: AlertIn, db: Session = Depends(get_db)) -> AlertOut:
    """Create or change an alert on one of your accounts (one per account and kind)."""
    account = _my_account(db, body.account_id)
    if account.status == "closed":
        raise HTTPException(
            409, f"Account {account.account_id} is closed; alerts cannot be set on it."
        )
    a = db.scalar(
        select(Alert).where(Alert.account_id == account.account_id, Alert.kind == body.kind)
    )
    if a is None:
        a = Alert(
            account_id=account.account_id,
            kind=body.kind,
            threshold_cents=body.threshold_cents,
            is_enabled=int(body.is_enabled),
        )
        db.add(a)
    else:
        a.threshold_cents = body.threshold_cents
        a.is_enabled = int(body.is_enabled)
    db.commit()
    return _alert_out(a)
