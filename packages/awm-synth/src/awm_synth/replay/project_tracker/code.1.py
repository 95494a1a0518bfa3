"""Project tracker tools: projects you belong to, their issues, assignments and comments."""

from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, Integer, String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-03-15T09:00:00"
USER_ID = 1

app = FastAPI(title="Project tracker")


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    email: Mapped[str] = mapped_column(String)


class Project(Base):
    __tablename__ = "projects"
    project_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(String)


class Member(Base):
    __tablename__ = "project_members"
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    role: Mapped[str] = mapped_column(String)


class Issue(Base):
    __tablename__ = "issues"
    issue_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.project_id"))
    title: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String)
    priority: Mapped[str] = mapped_column(String)
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("users.user_id"), nullable=True)
    reporter_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    created_at: Mapped[str] = mapped_column(String)
    updated_at: Mapped[str] = mapped_column(String)


class Comment(Base):
    __tablename__ = "comments"
    comment_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.issue_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    body: Mapped[str] = mapped_column(String)
    created_at: Mapped[str] = mapped_column(String)


def get_db():
    """Standalone: a local file database. Under awm the runtime overrides this dependency."""
    engine = create_engine("sqlite:///project_tracker.db")
    with Session(engine) as db:
        yield db


Status = Literal["open", "in_progress", "done"]
Priority = Literal["low", "medium", "high"]


class ProjectOut(BaseModel):
    project_id: int
    name: str
    description: str
    role: str


class MemberOut(BaseModel):
    user_id: int
    name: str
    role: str


class IssueOut(BaseModel):
    issue_id: int
    project_id: int
    title: str
    description: str
    status: str
    priority: str
    assignee_id: int | None
    reporter_id: int
    updated_at: str


class CommentOut(BaseModel):
    comment_id: int
    issue_id: int
    user_id: int
    body: str
    created_at: str


class Page(BaseModel):
    items: list
    total: int


class IssueIn(BaseModel):
    title: str = Field(min_length=1, max_length=200)
    description: str = ""
    priority: Priority = "medium"
    assignee_id: int | None = None


class StatusIn(BaseModel):
    status: Status


class AssignIn(BaseModel):
    assignee_id: int


class CommentIn(BaseModel):
    body: str = Field(min_length=1, max_length=4000)


def _my_projects(db: Session) -> dict[int, str]:
    rows = db.execute(
        select(Project.project_id, Project.name).join(Member, Member.project_id == Project.project_id).where(Member.user_id == USER_ID)
    ).all()
    return {pid: name for pid, name in rows}


def _require_project(db: Session, project_id: int) -> Project:
    project = db.get(Project, project_id)
    if project is None:
        raise HTTPException(404, f"project {project_id} not found; use list_projects")
    mine = _my_projects(db)
    if project_id not in mine:
        listing = ", ".join(f"{n} ({p})" for p, n in sorted(mine.items()))
        raise HTTPException(403, f"you are not a member of project {project.name} ({project_id}); your projects: {listing}")
    return project


def _issue(db: Session, issue_id: int) -> Issue:
    issue = db.get(Issue, issue_id)
    if issue is None:
        raise HTTPException(404, f"issue {issue_id} not found; use search_issues")
    _require_project(db, issue.project_id)
    return issue


def _require_member(db: Session, project_id: int, user_id: int) -> None:
    if db.get(Member, (project_id, user_id)) is None:
        members = db.scalars(select(Member.user_id).where(Member.project_id == project_id)).all()
        raise HTTPException(409, f"user {user_id} is not a member of project {project_id}; members: {sorted(members)}")


def _issue_out(issue: Issue) -> IssueOut:
    return IssueOut.model_validate(issue, from_attributes=True)


@app.get("/time", operation_id="get_current_time")
def get_current_time() -> dict:
    """The tracker's current date and time (ISO-8601)."""
    return {"now": REFERENCE_TIME}


@app.get("/projects", operation_id="list_projects", response_model=Page)
def list_projects(db: Session = Depends(get_db)):
    """Projects the signed-in user is a member of, with their role."""
    rows = db.execute(
        select(Project, Member.role).join(Member, Member.project_id == Project.project_id).where(Member.user_id == USER_ID).order_by(Project.project_id)
    ).all()
    items = [ProjectOut(project_id=p.project_id, name=p.name, description=p.description, role=role) for p, role in rows]
    return Page(items=items, total=len(items))


@app.get("/projects/{project_id}/members", operation_id="list_project_members", response_model=Page)
def list_project_members(project_id: int, db: Session = Depends(get_db)):
    """Members of one of your projects (user_id, name, role)."""
    _require_project(db, project_id)
    rows = db.execute(
        select(User, Member.role).join(Member, Member.user_id == User.user_id).where(Member.project_id == project_id).order_by(User.user_id)
    ).all()
    items = [MemberOut(user_id=u.user_id, name=u.name, role=role) for u, role in rows]
    return Page(items=items, total=len(items))


@app.get("/projects/{project_id}/issues", operation_id="search_issues", response_model=Page)
def search_issues(
    project_id: int,
    q: str | None = Query(None, description="Words in the title."),
    status: Status | None = Query(None),
    assignee_id: int | None = Query(None),
    limit: int = Query(10, ge=1, le=50),
    offset: int = Query(0, ge=0),
    db: Session = Depends(get_db),
):
    """Issues of one of your projects, filtered by words in the title, status and assignee; paginated."""
    _require_project(db, project_id)
    stmt = select(Issue).where(Issue.project_id == project_id).order_by(Issue.issue_id)
    if q:
        stmt = stmt.where(Issue.title.ilike(f"%{q}%"))
    if status:
        stmt = stmt.where(Issue.status == status)
    if assignee_id is not None:
        stmt = stmt.where(Issue.assignee_id == assignee_id)
    issues = db.scalars(stmt).all()
    return Page(items=[_issue_out(i) for i in issues[offset : offset + limit]], total=len(issues))


@app.get("/issues/{issue_id}", operation_id="get_issue", response_model=IssueOut)
def get_issue(issue_id: int, db: Session = Depends(get_db)):
    """One issue of one of your projects."""
    return _issue_out(_issue(db, issue_id))


@app.post("/projects/{project_id}/issues", operation_id="create_issue", response_model=IssueOut)
def create_issue(project_id: int, body: IssueIn, db: Session = Depends(get_db)):
    """Open a new issue in one of your projects; the assignee must be a member."""
    _require_project(db, project_id)
    if body.assignee_id is not None:
        _require_member(db, project_id, body.assignee_id)
    issue = Issue(
        project_id=project_id, title=body.title.strip(), description=body.description, status="open",
        priority=body.priority, assignee_id=body.assignee_id, reporter_id=USER_ID,
        created_at=REFERENCE_TIME, updated_at=REFERENCE_TIME,
    )
    db.add(issue)
    db.commit()
    db.refresh(issue)
    return _issue_out(issue)


@app.post("/issues/{issue_id}/status", operation_id="update_issue_status", response_model=IssueOut)
def update_issue_status(issue_id: int, body: StatusIn, db: Session = Depends(get_db)):
    """Set an issue's status (open, in_progress, done)."""
    issue = _issue(db, issue_id)
    if issue.status == body.status:
        raise HTTPException(409, f"issue {issue_id} is already {body.status}")
    issue.status = body.status
    issue.updated_at = REFERENCE_TIME
    db.commit()
    db.refresh(issue)
    return _issue_out(issue)


@app.post("/issues/{issue_id}/assignee", operation_id="assign_issue", response_model=IssueOut)
def assign_issue(issue_id: int, body: AssignIn, db: Session = Depends(get_db)):
    """Assign an issue to a member of its project."""
    issue = _issue(db, issue_id)
    _require_member(db, issue.project_id, body.assignee_id)
    issue.assignee_id = body.assignee_id
    issue.updated_at = REFERENCE_TIME
    db.commit()
    db.refresh(issue)
    return _issue_out(issue)


@app.post("/issues/{issue_id}/comments", operation_id="add_comment", response_model=CommentOut)
def add_comment(issue_id: int, body: CommentIn, db: Session = Depends(get_db)):
    """Comment on an issue of one of your projects."""
    _issue(db, issue_id)
    comment = Comment(issue_id=issue_id, user_id=USER_ID, body=body.body.strip(), created_at=REFERENCE_TIME)
    db.add(comment)
    db.commit()
    db.refresh(comment)
    return CommentOut.model_validate(comment, from_attributes=True)


@app.get("/issues/{issue_id}/comments", operation_id="get_issue", response_model=Page)
def list_comments(issue_id: int, db: Session = Depends(get_db)):
    """Comments on an issue, oldest first."""
    _issue(db, issue_id)
    comments = db.scalars(select(Comment).where(Comment.issue_id == issue_id).order_by(Comment.comment_id)).all()
    return Page(items=[CommentOut.model_validate(c, from_attributes=True) for c in comments], total=len(comments))
