"""Project tracker: projects, issues, labels, sprints, comments and time logs.
The logged-in user is user 1 (Ava Thompson); what she may do depends on her
role in each project (owner, maintainer, developer or viewer).

Issues are addressed by key (PROJECT-NUMBER, e.g. WEB-42). Times are ISO-8601
UTC, dates YYYY-MM-DD, durations minutes. "Now" is REFERENCE_TIME.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import date
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-11-05T10:00:00Z"
CURRENT_USER_ID = 1
MAX_PAGE = 50
OPEN_STATUSES = ("todo", "in_progress", "in_review")
CLOSED_STATUSES = ("done", "wont_do")
WRITE_ROLES = ("owner", "maintainer", "developer")
MANAGE_ROLES = ("owner", "maintainer")
PRIORITY_RANK = {"urgent": 0, "high": 1, "medium": 2, "low": 3}

Status = Literal["todo", "in_progress", "in_review", "done", "wont_do"]
Priority = Literal["low", "medium", "high", "urgent"]
IssueType = Literal["bug", "task", "story"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    handle: Mapped[str]
    title: Mapped[str]
    is_active: Mapped[int]
    email: Mapped[str]


class Project(Base):
    __tablename__ = "projects"
    project_id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str]
    name: Mapped[str]
    description: Mapped[str]
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    is_archived: Mapped[int]
    created_at: Mapped[str]


class Member(Base):
    __tablename__ = "project_members"
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    role: Mapped[str]
    joined_at: Mapped[str]


class Sprint(Base):
    __tablename__ = "sprints"
    sprint_id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"))
    name: Mapped[str]
    starts_on: Mapped[str]
    ends_on: Mapped[str]
    status: Mapped[str]


class Label(Base):
    __tablename__ = "labels"
    label_id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"))
    name: Mapped[str]
    color: Mapped[str]


class Issue(Base):
    __tablename__ = "issues"
    issue_id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"))
    number: Mapped[int]
    title: Mapped[str]
    description: Mapped[str]
    type: Mapped[str]
    status: Mapped[str]
    priority: Mapped[str]
    reporter_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("users.user_id"))
    sprint_id: Mapped[int | None] = mapped_column(ForeignKey("sprints.sprint_id"))
    estimate_points: Mapped[int | None]
    due_date: Mapped[str | None]
    created_at: Mapped[str]
    updated_at: Mapped[str]
    closed_at: Mapped[str | None]


class IssueLabel(Base):
    __tablename__ = "issue_labels"
    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"), primary_key=True)
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.label_id"), primary_key=True)


class IssueLink(Base):
    __tablename__ = "issue_links"
    link_id: Mapped[int] = mapped_column(primary_key=True)
    blocker_issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"))
    blocked_issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"))
    created_at: Mapped[str]


class Comment(Base):
    __tablename__ = "comments"
    comment_id: Mapped[int] = mapped_column(primary_key=True)
    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"))
    author_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    body: Mapped[str]
    created_at: Mapped[str]


class TimeLog(Base):
    __tablename__ = "time_logs"
    time_log_id: Mapped[int] = mapped_column(primary_key=True)
    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    minutes: Mapped[int]
    logged_on: Mapped[str]
    note: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('TRACKER_DB', 'tracker.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Tracker",
    description="Issue tracker for the logged-in user (user 1). Issues are addressed by key, e.g. WEB-42.",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    today: str
    timezone: str = "UTC"


class MembershipOut(BaseModel):
    project_key: str
    project_name: str
    role: str
    is_archived: bool


class ProfileOut(BaseModel):
    user_id: int
    name: str
    handle: str
    title: str
    email: str
    memberships: list[MembershipOut]


class ProjectOut(BaseModel):
    project_id: int
    key: str
    name: str
    description: str
    owner_handle: str
    is_archived: bool
    your_role: str
    open_issue_count: int


class ProjectList(BaseModel):
    items: list[ProjectOut]
    total: int


class MemberOut(BaseModel):
    user_id: int
    name: str
    handle: str
    title: str
    role: str
    is_active: bool


class MemberList(BaseModel):
    items: list[MemberOut]
    total: int


class LabelOut(BaseModel):
    label_id: int
    name: str
    color: str


class LabelList(BaseModel):
    items: list[LabelOut]
    total: int


class SprintOut(BaseModel):
    sprint_id: int
    project_key: str
    name: str
    starts_on: str
    ends_on: str
    status: str
    issue_count: int
    open_points: int


class SprintList(BaseModel):
    items: list[SprintOut]
    total: int


class ProjectDetailOut(ProjectOut):
    members: list[MemberOut]
    labels: list[LabelOut]
    sprints: list[SprintOut]


class IssueSummaryOut(BaseModel):
    issue_id: int
    key: str
    title: str
    type: str
    status: str
    priority: str
    assignee_handle: str | None
    sprint_id: int | None
    estimate_points: int | None
    due_date: str | None
    labels: list[str]
    updated_at: str


class IssuePage(BaseModel):
    items: list[IssueSummaryOut]
    total: int
    next_cursor: str | None


class IssueOut(IssueSummaryOut):
    project_key: str
    project_archived: bool
    your_role: str
    description: str
    reporter_handle: str
    sprint_name: str | None
    blocked_by: list[str]
    blocks: list[str]
    comment_count: int
    logged_minutes: int
    created_at: str
    closed_at: str | None


class IssueCreateIn(BaseModel):
    project_key: str
    title: str = Field(min_length=3, max_length=200)
    type: IssueType = "task"
    priority: Priority = "medium"
    description: str = Field(default="", max_length=4000)
    assignee: str | None = Field(default=None, description="Handle of a project member, or 'me'")
    sprint_id: int | None = Field(
        default=None, description="A planned or active sprint of the project"
    )
    labels: list[str] = Field(
        default_factory=list, description="Existing label names of the project"
    )
    estimate_points: int | None = Field(default=None, ge=0, le=100)
    due_date: str | None = Field(default=None, description="YYYY-MM-DD")


class LabelCreateIn(BaseModel):
    name: str = Field(min_length=1, max_length=40)
    color: str = Field(default="#888888", pattern=r"^#[0-9a-fA-F]{6}$")


class CommentIn(BaseModel):
    body: str = Field(min_length=1, max_length=4000)


class CommentOut(BaseModel):
    comment_id: int
    issue_key: str
    author_handle: str
    body: str
    created_at: str


class CommentPage(BaseModel):
    items: list[CommentOut]
    total: int
    next_cursor: str | None


class TimeLogIn(BaseModel):
    minutes: int = Field(ge=1, le=720, description="1 to 720 minutes")
    logged_on: str = Field(description="YYYY-MM-DD, today or earlier")
    note: str = Field(default="", max_length=300)


class TimeLogOut(BaseModel):
    time_log_id: int
    issue_key: str
    user_handle: str
    minutes: int
    logged_on: str
    note: str


class TimeLogPage(BaseModel):
    items: list[TimeLogOut]
    total: int
    next_cursor: str | None
    total_minutes: int


class SprintCreateIn(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    starts_on: str = Field(description="YYYY-MM-DD")
    ends_on: str = Field(description="YYYY-MM-DD")


class SprintCloseOut(BaseModel):
    sprint: SprintOut
    moved_issue_keys: list[str]
    moved_to_sprint_id: int | None


class LinkOut(BaseModel):
    link_id: int
    blocker_key: str
    blocked_key: str


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


def _today() -> str:
    return REFERENCE_TIME[:10]


def _parse_date(value: str, name: str) -> str:
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError as exc:
        raise HTTPException(400, f"{name}={value!r} is not a date; use YYYY-MM-DD.") from exc


def _role(db: Session, project_id: int) -> str | None:
    m = db.get(Member, (project_id, CURRENT_USER_ID))
    return m.role if m else None


def _my_project_ids(db: Session) -> list[int]:
    return list(db.scalars(select(Member.project_id).where(Member.user_id == CURRENT_USER_ID)))


def _project(db: Session, project_key: str) -> Project:
    p = db.scalar(select(Project).where(func.upper(Project.key) == project_key.strip().upper()))
    if p is None or _role(db, p.project_id) is None:
        keys = [db.get(Project, pid).key for pid in _my_project_ids(db)]
        raise HTTPException(
            404, f"No project {project_key!r} among your projects; your project keys: {keys}."
        )
    return p


def _require_write(db: Session, p: Project, manage: bool = False) -> str:
    role = _role(db, p.project_id) or ""
    if p.is_archived:
        raise HTTPException(
            409, f"Project {p.key} ({p.name}) is archived and read-only; nothing in it can change."
        )
    allowed = MANAGE_ROLES if manage else WRITE_ROLES
    if role not in allowed:
        what = "manage sprints and labels" if manage else "change issues"
        raise HTTPException(
            403,
            f"Your role in {p.key} is {role}; only {', '.join(allowed)} can {what}. "
            f"Ask the project owner for access.",
        )
    return role


KEY_RE = re.compile(r"^\s*([A-Za-z]+)-(\d+)\s*$")


def _issue(db: Session, issue_key: str) -> tuple[Issue, Project]:
    m = KEY_RE.match(issue_key or "")
    if not m:
        raise HTTPException(
            400, f"{issue_key!r} is not an issue key; use PROJECT-NUMBER, e.g. WEB-42."
        )
    p = _project(db, m.group(1))
    issue = db.scalar(
        select(Issue).where(Issue.project_id == p.project_id, Issue.number == int(m.group(2)))
    )
    if issue is None:
        raise HTTPException(404, f"Issue {p.key}-{m.group(2)} does not exist; use search_issues.")
    return issue, p


def _key(db: Session, issue: Issue) -> str:
    return f"{db.get(Project, issue.project_id).key}-{issue.number}"


def _handle(db: Session, user_id: int | None) -> str | None:
    return db.get(User, user_id).handle if user_id else None


def _member_user(db: Session, p: Project, who: str) -> User:
    """A project member who can be assigned work, by handle or 'me'."""
    if who.strip().lower() == "me":
        user = db.get(User, CURRENT_USER_ID)
    else:
        user = db.scalar(select(User).where(func.lower(User.handle) == who.strip().lower()))
    member = db.get(Member, (p.project_id, user.user_id)) if user else None
    if user is None or member is None or member.role == "viewer" or not user.is_active:
        valid = [
            db.get(User, m.user_id).handle
            for m in db.scalars(select(Member).where(Member.project_id == p.project_id))
            if m.role != "viewer" and db.get(User, m.user_id).is_active
        ]
        raise HTTPException(
            409,
            f"{who!r} cannot be assigned in {p.key}: assignees must be active members who are not "
            f"viewers. Valid handles: {valid}.",
        )
    return user


def _label(db: Session, p: Project, name: str) -> Label:
    label = db.scalar(
        select(Label).where(
            Label.project_id == p.project_id, func.lower(Label.name) == name.strip().lower()
        )
    )
    if label is None:
        names = [
            lab.name for lab in db.scalars(select(Label).where(Label.project_id == p.project_id))
        ]
        raise HTTPException(
            404, f"{p.key} has no label {name!r}; its labels: {names}. Use create_label to add one."
        )
    return label


def _labels_of(db: Session, issue_id: int) -> list[str]:
    return sorted(
        db.scalars(
            select(Label.name)
            .join(IssueLabel, IssueLabel.label_id == Label.label_id)
            .where(IssueLabel.issue_id == issue_id)
        )
    )


def _summary(db: Session, i: Issue) -> IssueSummaryOut:
    return IssueSummaryOut(
        issue_id=i.issue_id,
        key=_key(db, i),
        title=i.title,
        type=i.type,
        status=i.status,
        priority=i.priority,
        assignee_handle=_handle(db, i.assignee_id),
        sprint_id=i.sprint_id,
        estimate_points=i.estimate_points,
        due_date=i.due_date,
        labels=_labels_of(db, i.issue_id),
        updated_at=i.updated_at,
    )


def _issue_out(db: Session, i: Issue) -> IssueOut:
    p = db.get(Project, i.project_id)
    blocked_by = [
        _key(db, db.get(Issue, link.blocker_issue_id))
        for link in db.scalars(select(IssueLink).where(IssueLink.blocked_issue_id == i.issue_id))
    ]
    blocks = [
        _key(db, db.get(Issue, link.blocked_issue_id))
        for link in db.scalars(select(IssueLink).where(IssueLink.blocker_issue_id == i.issue_id))
    ]
    sprint = db.get(Sprint, i.sprint_id) if i.sprint_id else None
    return IssueOut(
        **_summary(db, i).model_dump(),
        project_key=p.key,
        project_archived=bool(p.is_archived),
        your_role=_role(db, p.project_id) or "",
        description=i.description,
        reporter_handle=_handle(db, i.reporter_id) or "",
        sprint_name=sprint.name if sprint else None,
        blocked_by=blocked_by,
        blocks=blocks,
        comment_count=db.scalar(
            select(func.count()).select_from(Comment).where(Comment.issue_id == i.issue_id)
        )
        or 0,
        logged_minutes=db.scalar(
            select(func.coalesce(func.sum(TimeLog.minutes), 0)).where(
                TimeLog.issue_id == i.issue_id
            )
        )
        or 0,
        created_at=i.created_at,
        closed_at=i.closed_at,
    )


def _sprint_out(db: Session, s: Sprint) -> SprintOut:
    issues = list(db.scalars(select(Issue).where(Issue.sprint_id == s.sprint_id)))
    return SprintOut(
        sprint_id=s.sprint_id,
        project_key=db.get(Project, s.project_id).key,
        name=s.name,
        starts_on=s.starts_on,
        ends_on=s.ends_on,
        status=s.status,
        issue_count=len(issues),
        open_points=sum(i.estimate_points or 0 for i in issues if i.status in OPEN_STATUSES),
    )


def _my_sprint(db: Session, sprint_id: int) -> tuple[Sprint, Project]:
    s = db.get(Sprint, sprint_id)
    if s is None or _role(db, s.project_id) is None:
        raise HTTPException(
            404, f"Sprint {sprint_id} not found in your projects; use list_sprints."
        )
    return s, db.get(Project, s.project_id)


def _member_out(db: Session, m: Member) -> MemberOut:
    u = db.get(User, m.user_id)
    return MemberOut(
        user_id=u.user_id,
        name=u.name,
        handle=u.handle,
        title=u.title,
        role=m.role,
        is_active=bool(u.is_active),
    )


def _project_out(db: Session, p: Project) -> ProjectOut:
    return ProjectOut(
        project_id=p.project_id,
        key=p.key,
        name=p.name,
        description=p.description,
        owner_handle=_handle(db, p.owner_id) or "",
        is_archived=bool(p.is_archived),
        your_role=_role(db, p.project_id) or "",
        open_issue_count=db.scalar(
            select(func.count())
            .select_from(Issue)
            .where(Issue.project_id == p.project_id, Issue.status.in_(OPEN_STATUSES))
        )
        or 0,
    )


def _touch(issue: Issue) -> None:
    issue.updated_at = REFERENCE_TIME


def _comment_out(db: Session, c: Comment) -> CommentOut:
    return CommentOut(
        comment_id=c.comment_id,
        issue_key=_key(db, db.get(Issue, c.issue_id)),
        author_handle=_handle(db, c.author_id) or "",
        body=c.body,
        created_at=c.created_at,
    )


def _log_out(db: Session, t: TimeLog) -> TimeLogOut:
    return TimeLogOut(
        time_log_id=t.time_log_id,
        issue_key=_key(db, db.get(Issue, t.issue_id)),
        user_handle=_handle(db, t.user_id) or "",
        minutes=t.minutes,
        logged_on=t.logged_on,
        note=t.note,
    )


def _sprint_for(db: Session, p: Project, sprint_id: int) -> Sprint:
    s = db.get(Sprint, sprint_id)
    if s is None or s.project_id != p.project_id:
        valid = [
            x.sprint_id
            for x in db.scalars(
                select(Sprint).where(Sprint.project_id == p.project_id, Sprint.status != "closed")
            )
        ]
        raise HTTPException(
            404, f"Sprint {sprint_id} is not a sprint of {p.key}; its open sprint ids: {valid}."
        )
    if s.status == "closed":
        raise HTTPException(
            409, f"Sprint {sprint_id} ({s.name}) is closed; pick a planned or active sprint."
        )
    return s


# --------------------------------------------------------------------------- tools: me and projects


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC). Use it for 'today', 'yesterday' and 'this week'."""
    return CurrentTimeOut(current_time=REFERENCE_TIME, today=_today())


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """Your user profile and your role in each project."""
    u = db.get(User, CURRENT_USER_ID)
    memberships = []
    for pid in _my_project_ids(db):
        p = db.get(Project, pid)
        memberships.append(
            MembershipOut(
                project_key=p.key,
                project_name=p.name,
                role=_role(db, pid) or "",
                is_archived=bool(p.is_archived),
            )
        )
    return ProfileOut(
        user_id=u.user_id,
        name=u.name,
        handle=u.handle,
        title=u.title,
        email=u.email,
        memberships=memberships,
    )


@app.get("/projects", operation_id="list_my_projects", response_model=ProjectList)
def list_my_projects(include_archived: bool = True, db: Session = Depends(get_db)) -> ProjectList:
    """Projects you are a member of, with your role."""
    items = []
    for pid in sorted(_my_project_ids(db)):
        p = db.get(Project, pid)
        if p.is_archived and not include_archived:
            continue
        items.append(_project_out(db, p))
    return ProjectList(items=items, total=len(items))


@app.get("/projects/{project_key}", operation_id="get_project", response_model=ProjectDetailOut)
def get_project(project_key: str, db: Session = Depends(get_db)) -> ProjectDetailOut:
    """A project with its members (handles, titles, roles), labels and sprints."""
    p = _project(db, project_key)
    members = [
        _member_out(db, m)
        for m in db.scalars(
            select(Member).where(Member.project_id == p.project_id).order_by(Member.user_id)
        )
    ]
    labels = [
        LabelOut(label_id=lab.label_id, name=lab.name, color=lab.color)
        for lab in db.scalars(
            select(Label).where(Label.project_id == p.project_id).order_by(Label.label_id)
        )
    ]
    sprints = [
        _sprint_out(db, s)
        for s in db.scalars(
            select(Sprint).where(Sprint.project_id == p.project_id).order_by(Sprint.starts_on)
        )
    ]
    return ProjectDetailOut(
        **_project_out(db, p).model_dump(), members=members, labels=labels, sprints=sprints
    )


@app.get(
    "/projects/{project_key}/members",
    operation_id="list_project_members",
    response_model=MemberList,
)
def list_project_members(
    project_key: str,
    role: Literal["owner", "maintainer", "developer", "viewer"] | None = None,
    db: Session = Depends(get_db),
) -> MemberList:
    """Members of a project with their handle, job title and role."""
    p = _project(db, project_key)
    stmt = select(Member).where(Member.project_id == p.project_id)
    if role:
        stmt = stmt.where(Member.role == role)
    items = [_member_out(db, m) for m in db.scalars(stmt.order_by(Member.user_id))]
    return MemberList(items=items, total=len(items))


# --------------------------------------------------------------------------- tools: issues


@app.get("/issues", operation_id="search_issues", response_model=IssuePage)
def search_issues(
    project_key: str | None = Query(default=None, description="Limit to one project"),
    text: str | None = Query(default=None, description="Words in the title"),
    status: Status | None = None,
    open_only: bool = Query(default=False, description="Only todo, in_progress and in_review"),
    type: IssueType | None = None,
    priority: Priority | None = None,
    assignee: str | None = Query(
        default=None, description="A handle, 'me', or 'none' for unassigned"
    ),
    label: str | None = Query(default=None, description="A label name"),
    sprint_id: int | None = None,
    backlog_only: bool = Query(default=False, description="Only issues in no sprint"),
    sort: Literal["key", "priority", "due_date", "updated"] = "key",
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> IssuePage:
    """Search issues in your projects with filters; paginated (follow next_cursor for more)."""
    offset = _parse_cursor(cursor)
    stmt = select(Issue).where(Issue.project_id.in_(_my_project_ids(db)))
    if project_key:
        stmt = stmt.where(Issue.project_id == _project(db, project_key).project_id)
    if text:
        for word in text.lower().split():
            stmt = stmt.where(func.lower(Issue.title).contains(word))
    if status:
        stmt = stmt.where(Issue.status == status)
    if open_only:
        stmt = stmt.where(Issue.status.in_(OPEN_STATUSES))
    if type:
        stmt = stmt.where(Issue.type == type)
    if priority:
        stmt = stmt.where(Issue.priority == priority)
    if assignee:
        who = assignee.strip().lower()
        if who == "none":
            stmt = stmt.where(Issue.assignee_id.is_(None))
        else:
            user = (
                db.get(User, CURRENT_USER_ID)
                if who == "me"
                else db.scalar(select(User).where(func.lower(User.handle) == who))
            )
            if user is None:
                raise HTTPException(
                    404, f"No user with handle {assignee!r}; see get_project's members."
                )
            stmt = stmt.where(Issue.assignee_id == user.user_id)
    if label:
        stmt = stmt.where(
            Issue.issue_id.in_(
                select(IssueLabel.issue_id)
                .join(Label, Label.label_id == IssueLabel.label_id)
                .where(func.lower(Label.name) == label.strip().lower())
            )
        )
    if sprint_id is not None:
        stmt = stmt.where(Issue.sprint_id == sprint_id)
    if backlog_only:
        stmt = stmt.where(Issue.sprint_id.is_(None))
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = list(db.scalars(stmt))
    if sort == "priority":
        rows.sort(key=lambda i: (PRIORITY_RANK[i.priority], i.project_id, i.number))
    elif sort == "due_date":
        rows.sort(key=lambda i: (i.due_date is None, i.due_date or "", i.project_id, i.number))
    elif sort == "updated":
        rows.sort(key=lambda i: (i.updated_at, i.issue_id), reverse=True)
    else:
        rows.sort(key=lambda i: (i.project_id, i.number))
    return IssuePage(
        items=[_summary(db, i) for i in rows[offset : offset + limit]],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/issues/{issue_key}", operation_id="get_issue", response_model=IssueOut)
def get_issue(issue_key: str, db: Session = Depends(get_db)) -> IssueOut:
    """One issue with labels, blockers, comment count, logged time and your role in its project."""
    issue, _ = _issue(db, issue_key)
    return _issue_out(db, issue)


@app.post("/issues", operation_id="create_issue", response_model=IssueOut)
def create_issue(body: IssueCreateIn, db: Session = Depends(get_db)) -> IssueOut:
    """Create an issue in a project where you can write; it gets the next number and status todo."""
    p = _project(db, body.project_key)
    _require_write(db, p)
    assignee = _member_user(db, p, body.assignee) if body.assignee else None
    sprint = _sprint_for(db, p, body.sprint_id) if body.sprint_id is not None else None
    labels = [_label(db, p, name) for name in dict.fromkeys(body.labels)]
    due = _parse_date(body.due_date, "due_date") if body.due_date else None
    number = (
        db.scalar(
            select(func.coalesce(func.max(Issue.number), 0)).where(Issue.project_id == p.project_id)
        )
        or 0
    ) + 1
    issue = Issue(
        project_id=p.project_id,
        number=number,
        title=body.title.strip(),
        description=body.description.strip(),
        type=body.type,
        status="todo",
        priority=body.priority,
        reporter_id=CURRENT_USER_ID,
        assignee_id=assignee.user_id if assignee else None,
        sprint_id=sprint.sprint_id if sprint else None,
        estimate_points=body.estimate_points,
        due_date=due,
        created_at=REFERENCE_TIME,
        updated_at=REFERENCE_TIME,
    )
    db.add(issue)
    db.flush()
    for lab in labels:
        db.add(IssueLabel(issue_id=issue.issue_id, label_id=lab.label_id))
    db.commit()
    return _issue_out(db, issue)


@app.patch("/issues/{issue_key}", operation_id="update_issue", response_model=IssueOut)
def update_issue(
    issue_key: str,
    title: str | None = Query(default=None, min_length=3, max_length=200),
    description: str | None = Query(default=None, max_length=4000),
    type: IssueType | None = None,
    priority: Priority | None = None,
    estimate_points: int | None = Query(default=None, ge=0, le=100),
    due_date: str | None = Query(default=None, description="YYYY-MM-DD"),
    db: Session = Depends(get_db),
) -> IssueOut:
    """Edit an issue's title, description, type, priority, estimate or due date (pass only what changes)."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    changes = {
        "title": title.strip() if title else None,
        "description": description,
        "type": type,
        "priority": priority,
        "estimate_points": estimate_points,
        "due_date": _parse_date(due_date, "due_date") if due_date else None,
    }
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        raise HTTPException(400, "Nothing to change: pass at least one field.")
    for k, v in changes.items():
        setattr(issue, k, v)
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.post("/issues/{issue_key}/status", operation_id="change_issue_status", response_model=IssueOut)
def change_issue_status(issue_key: str, status: Status, db: Session = Depends(get_db)) -> IssueOut:
    """Move an issue to another status. It cannot become done while an issue blocking it is still open."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    if issue.status == status:
        raise HTTPException(409, f"{_key(db, issue)} is already {status}.")
    if status == "done":
        open_blockers = [
            _key(db, b)
            for b in db.scalars(
                select(Issue)
                .join(IssueLink, IssueLink.blocker_issue_id == Issue.issue_id)
                .where(
                    IssueLink.blocked_issue_id == issue.issue_id, Issue.status.in_(OPEN_STATUSES)
                )
            )
        ]
        if open_blockers:
            raise HTTPException(
                409,
                f"{_key(db, issue)} is blocked by {open_blockers}, which are still open; "
                "finish those first.",
            )
    issue.status = status
    issue.closed_at = REFERENCE_TIME if status in CLOSED_STATUSES else None
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.post("/issues/{issue_key}/assignee", operation_id="assign_issue", response_model=IssueOut)
def assign_issue(
    issue_key: str,
    assignee: str = Query(description="Handle of an active, non-viewer project member, or 'me'"),
    db: Session = Depends(get_db),
) -> IssueOut:
    """Assign an issue to a project member."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    user = _member_user(db, p, assignee)
    if issue.assignee_id == user.user_id:
        raise HTTPException(409, f"{_key(db, issue)} is already assigned to {user.handle}.")
    issue.assignee_id = user.user_id
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.delete("/issues/{issue_key}/assignee", operation_id="unassign_issue", response_model=IssueOut)
def unassign_issue(issue_key: str, db: Session = Depends(get_db)) -> IssueOut:
    """Remove an issue's assignee."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    if issue.assignee_id is None:
        raise HTTPException(409, f"{_key(db, issue)} has no assignee.")
    issue.assignee_id = None
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.post("/issues/{issue_key}/labels", operation_id="add_label", response_model=IssueOut)
def add_label(
    issue_key: str, label: str = Query(description="Label name"), db: Session = Depends(get_db)
) -> IssueOut:
    """Put one of the project's labels on an issue."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    lab = _label(db, p, label)
    if db.get(IssueLabel, (issue.issue_id, lab.label_id)):
        raise HTTPException(409, f"{_key(db, issue)} already has label {lab.name}.")
    db.add(IssueLabel(issue_id=issue.issue_id, label_id=lab.label_id))
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.delete(
    "/issues/{issue_key}/labels/{label}", operation_id="remove_label", response_model=IssueOut
)
def remove_label(issue_key: str, label: str, db: Session = Depends(get_db)) -> IssueOut:
    """Take a label off an issue."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    lab = _label(db, p, label)
    link = db.get(IssueLabel, (issue.issue_id, lab.label_id))
    if link is None:
        raise HTTPException(
            404,
            f"{_key(db, issue)} does not have label {lab.name}; its labels: {_labels_of(db, issue.issue_id)}.",
        )
    db.delete(link)
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.post(
    "/issues/{issue_key}/sprint", operation_id="move_issue_to_sprint", response_model=IssueOut
)
def move_issue_to_sprint(
    issue_key: str,
    sprint_id: int | None = Query(
        default=None, description="Target sprint; omit to move to the backlog"
    ),
    db: Session = Depends(get_db),
) -> IssueOut:
    """Put an issue into a planned or active sprint of its project, or back into the backlog."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    target = _sprint_for(db, p, sprint_id) if sprint_id is not None else None
    new_id = target.sprint_id if target else None
    if issue.sprint_id == new_id:
        where = f"sprint {new_id}" if new_id else "the backlog"
        raise HTTPException(409, f"{_key(db, issue)} is already in {where}.")
    issue.sprint_id = new_id
    _touch(issue)
    db.commit()
    return _issue_out(db, issue)


@app.post("/issues/{issue_key}/blocks", operation_id="link_issues", response_model=LinkOut)
def link_issues(
    issue_key: str,
    blocked_issue_key: str = Query(description="The issue that cannot finish before this one"),
    db: Session = Depends(get_db),
) -> LinkOut:
    """Record that one issue blocks another (same or different project)."""
    blocker, p = _issue(db, issue_key)
    blocked, q = _issue(db, blocked_issue_key)
    _require_write(db, p)
    _require_write(db, q)
    if blocker.issue_id == blocked.issue_id:
        raise HTTPException(400, "An issue cannot block itself.")
    for a, b in ((blocker, blocked), (blocked, blocker)):
        if db.scalar(
            select(IssueLink).where(
                IssueLink.blocker_issue_id == a.issue_id, IssueLink.blocked_issue_id == b.issue_id
            )
        ):
            raise HTTPException(409, f"{_key(db, a)} already blocks {_key(db, b)}.")
    link = IssueLink(
        blocker_issue_id=blocker.issue_id,
        blocked_issue_id=blocked.issue_id,
        created_at=REFERENCE_TIME,
    )
    db.add(link)
    db.commit()
    return LinkOut(
        link_id=link.link_id, blocker_key=_key(db, blocker), blocked_key=_key(db, blocked)
    )


# --------------------------------------------------------------------------- tools: labels


@app.get("/projects/{project_key}/labels", operation_id="list_labels", response_model=LabelList)
def list_labels(project_key: str, db: Session = Depends(get_db)) -> LabelList:
    """A project's labels."""
    p = _project(db, project_key)
    items = [
        LabelOut(label_id=lab.label_id, name=lab.name, color=lab.color)
        for lab in db.scalars(
            select(Label).where(Label.project_id == p.project_id).order_by(Label.label_id)
        )
    ]
    return LabelList(items=items, total=len(items))


@app.post("/projects/{project_key}/labels", operation_id="create_label", response_model=LabelOut)
def create_label(project_key: str, body: LabelCreateIn, db: Session = Depends(get_db)) -> LabelOut:
    """Create a label in a project (owners and maintainers)."""
    p = _project(db, project_key)
    _require_write(db, p, manage=True)
    name = body.name.strip().lower()
    if db.scalar(
        select(Label).where(Label.project_id == p.project_id, func.lower(Label.name) == name)
    ):
        raise HTTPException(409, f"{p.key} already has a label named {name!r}.")
    lab = Label(project_id=p.project_id, name=name, color=body.color.lower())
    db.add(lab)
    db.commit()
    return LabelOut(label_id=lab.label_id, name=lab.name, color=lab.color)


# --------------------------------------------------------------------------- tools: comments


@app.get("/issues/{issue_key}/comments", operation_id="list_comments", response_model=CommentPage)
def list_comments(
    issue_key: str,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> CommentPage:
    """An issue's comments, oldest first; paginated."""
    issue, _ = _issue(db, issue_key)
    offset = _parse_cursor(cursor)
    stmt = select(Comment).where(Comment.issue_id == issue.issue_id)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Comment.created_at, Comment.comment_id).offset(offset).limit(limit)
    )
    return CommentPage(
        items=[_comment_out(db, c) for c in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.post("/issues/{issue_key}/comments", operation_id="add_comment", response_model=CommentOut)
def add_comment(issue_key: str, body: CommentIn, db: Session = Depends(get_db)) -> CommentOut:
    """Comment on an issue."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    c = Comment(
        issue_id=issue.issue_id,
        author_id=CURRENT_USER_ID,
        body=body.body.strip(),
        created_at=REFERENCE_TIME,
    )
    db.add(c)
    db.commit()
    return _comment_out(db, c)


@app.delete("/comments/{comment_id}", operation_id="delete_comment", response_model=CommentOut)
def delete_comment(comment_id: int, db: Session = Depends(get_db)) -> CommentOut:
    """Delete one of your own comments."""
    c = db.get(Comment, comment_id)
    issue = db.get(Issue, c.issue_id) if c else None
    if c is None or _role(db, issue.project_id) is None:
        raise HTTPException(404, f"Comment {comment_id} not found; use list_comments.")
    if c.author_id != CURRENT_USER_ID:
        raise HTTPException(
            403,
            f"Comment {comment_id} was written by {_handle(db, c.author_id)}; you can only delete your own.",
        )
    _require_write(db, db.get(Project, issue.project_id))
    out = _comment_out(db, c)
    db.delete(c)
    db.commit()
    return out


# --------------------------------------------------------------------------- tools: time


@app.post("/issues/{issue_key}/time", operation_id="log_time", response_model=TimeLogOut)
def log_time(issue_key: str, body: TimeLogIn, db: Session = Depends(get_db)) -> TimeLogOut:
    """Log time you spent on an issue (today or an earlier day)."""
    issue, p = _issue(db, issue_key)
    _require_write(db, p)
    day = _parse_date(body.logged_on, "logged_on")
    if day > _today():
        raise HTTPException(400, f"logged_on {day} is in the future; today is {_today()}.")
    t = TimeLog(
        issue_id=issue.issue_id,
        user_id=CURRENT_USER_ID,
        minutes=body.minutes,
        logged_on=day,
        note=body.note.strip(),
    )
    db.add(t)
    db.commit()
    return _log_out(db, t)


@app.get("/time-logs", operation_id="list_time_logs", response_model=TimeLogPage)
def list_time_logs(
    issue_key: str | None = None,
    user: str = Query(default="me", description="'me', a handle, or 'all'"),
    from_date: str | None = Query(default=None, description="YYYY-MM-DD, inclusive"),
    to_date: str | None = Query(default=None, description="YYYY-MM-DD, inclusive"),
    limit: int = Query(default=20, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> TimeLogPage:
    """Time logs in your projects, newest day first, with the total minutes of everything matched."""
    offset = _parse_cursor(cursor)
    stmt = (
        select(TimeLog)
        .join(Issue, Issue.issue_id == TimeLog.issue_id)
        .where(Issue.project_id.in_(_my_project_ids(db)))
    )
    if issue_key:
        stmt = stmt.where(TimeLog.issue_id == _issue(db, issue_key)[0].issue_id)
    who = user.strip().lower()
    if who == "me":
        stmt = stmt.where(TimeLog.user_id == CURRENT_USER_ID)
    elif who != "all":
        u = db.scalar(select(User).where(func.lower(User.handle) == who))
        if u is None:
            raise HTTPException(404, f"No user with handle {user!r}.")
        stmt = stmt.where(TimeLog.user_id == u.user_id)
    if from_date:
        stmt = stmt.where(TimeLog.logged_on >= _parse_date(from_date, "from_date"))
    if to_date:
        stmt = stmt.where(TimeLog.logged_on <= _parse_date(to_date, "to_date"))
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    minutes = db.scalar(select(func.coalesce(func.sum(stmt.subquery().c.minutes), 0))) or 0
    rows = db.scalars(
        stmt.order_by(TimeLog.logged_on.desc(), TimeLog.time_log_id.desc())
        .offset(offset)
        .limit(limit)
    )
    return TimeLogPage(
        items=[_log_out(db, t) for t in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
        total_minutes=int(minutes),
    )


@app.delete("/time-logs/{time_log_id}", operation_id="delete_time_log", response_model=TimeLogOut)
def delete_time_log(time_log_id: int, db: Session = Depends(get_db)) -> TimeLogOut:
    """Delete one of your own time logs."""
    t = db.get(TimeLog, time_log_id)
    if t is None or t.user_id != CURRENT_USER_ID:
        raise HTTPException(
            404, f"Time log {time_log_id} is not one of yours; use list_time_logs to find yours."
        )
    _require_write(db, db.get(Project, db.get(Issue, t.issue_id).project_id))
    out = _log_out(db, t)
    db.delete(t)
    db.commit()
    return out


# --------------------------------------------------------------------------- tools: sprints


@app.get("/projects/{project_key}/sprints", operation_id="list_sprints", response_model=SprintList)
def list_sprints(
    project_key: str,
    status: Literal["planned", "active", "closed"] | None = None,
    db: Session = Depends(get_db),
) -> SprintList:
    """A project's sprints in date order, with issue counts and open story points."""
    p = _project(db, project_key)
    stmt = select(Sprint).where(Sprint.project_id == p.project_id)
    if status:
        stmt = stmt.where(Sprint.status == status)
    items = [_sprint_out(db, s) for s in db.scalars(stmt.order_by(Sprint.starts_on))]
    return SprintList(items=items, total=len(items))


@app.post("/projects/{project_key}/sprints", operation_id="create_sprint", response_model=SprintOut)
def create_sprint(
    project_key: str, body: SprintCreateIn, db: Session = Depends(get_db)
) -> SprintOut:
    """Plan a new sprint (owners and maintainers)."""
    p = _project(db, project_key)
    _require_write(db, p, manage=True)
    starts = _parse_date(body.starts_on, "starts_on")
    ends = _parse_date(body.ends_on, "ends_on")
    if ends <= starts:
        raise HTTPException(400, f"ends_on {ends} must be after starts_on {starts}.")
    name = body.name.strip()
    if db.scalar(select(Sprint).where(Sprint.project_id == p.project_id, Sprint.name == name)):
        raise HTTPException(409, f"{p.key} already has a sprint named {name!r}.")
    s = Sprint(project_id=p.project_id, name=name, starts_on=starts, ends_on=ends, status="planned")
    db.add(s)
    db.commit()
    return _sprint_out(db, s)


@app.post("/sprints/{sprint_id}/start", operation_id="start_sprint", response_model=SprintOut)
def start_sprint(sprint_id: int, db: Session = Depends(get_db)) -> SprintOut:
    """Start a planned sprint. A project can have only one active sprint at a time."""
    s, p = _my_sprint(db, sprint_id)
    _require_write(db, p, manage=True)
    if s.status != "planned":
        raise HTTPException(
            409, f"Sprint {sprint_id} ({s.name}) is {s.status}; only planned sprints can start."
        )
    active = db.scalar(
        select(Sprint).where(Sprint.project_id == p.project_id, Sprint.status == "active")
    )
    if active:
        raise HTTPException(
            409,
            f"{p.key} already has an active sprint, {active.sprint_id} ({active.name}); close it first "
            "with close_sprint.",
        )
    s.status = "active"
    db.commit()
    return _sprint_out(db, s)


@app.post("/sprints/{sprint_id}/close", operation_id="close_sprint", response_model=SprintCloseOut)
def close_sprint(
    sprint_id: int,
    move_unfinished_to: int | None = Query(
        default=None,
        description="Planned sprint of the same project for unfinished issues; omit for the backlog",
    ),
    db: Session = Depends(get_db),
) -> SprintCloseOut:
    """Close the active sprint; its unfinished issues move to another sprint or to the backlog."""
    s, p = _my_sprint(db, sprint_id)
    _require_write(db, p, manage=True)
    if s.status != "active":
        raise HTTPException(
            409,
            f"Sprint {sprint_id} ({s.name}) is {s.status}; only the active sprint can be closed.",
        )
    target = None
    if move_unfinished_to is not None:
        if move_unfinished_to == sprint_id:
            raise HTTPException(400, "move_unfinished_to must be a different sprint.")
        target = _sprint_for(db, p, move_unfinished_to)
    moved = []
    for issue in db.scalars(
        select(Issue)
        .where(Issue.sprint_id == sprint_id, Issue.status.in_(OPEN_STATUSES))
        .order_by(Issue.number)
    ):
        issue.sprint_id = target.sprint_id if target else None
        _touch(issue)
        moved.append(_key(db, issue))
    s.status = "closed"
    db.commit()
    return SprintCloseOut(
        sprint=_sprint_out(db, s),
        moved_issue_keys=moved,
        moved_to_sprint_id=target.sprint_id if target else None,
    )
