"""Online learning platform: course catalogue, enrollments and waitlists, lesson
progress, module quizzes, certificates and course reviews. The logged-in learner
is user 1 (Priya Raman).

Times are ISO-8601 UTC; course dates are YYYY-MM-DD. "Now" is REFERENCE_TIME.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, or_, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

REFERENCE_TIME = "2025-09-15T10:00:00Z"
TODAY = REFERENCE_TIME[:10]
CURRENT_USER_ID = 1
MAX_PAGE = 50
SEAT_HOLDING = ("active", "completed")

Category = Literal["programming", "data", "design", "business", "languages"]
Level = Literal["beginner", "intermediate", "advanced"]
EnrollmentStatus = Literal["active", "completed", "dropped", "waitlisted"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    joined_at: Mapped[str]


class Instructor(Base):
    __tablename__ = "instructors"
    instructor_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    headline: Mapped[str]
    email: Mapped[str]


class Course(Base):
    __tablename__ = "courses"
    course_id: Mapped[int] = mapped_column(primary_key=True)
    instructor_id: Mapped[int] = mapped_column(ForeignKey("instructors.instructor_id"))
    code: Mapped[str]
    title: Mapped[str]
    category: Mapped[str]
    level: Mapped[str]
    capacity: Mapped[int]
    status: Mapped[str]
    starts_on: Mapped[str]
    enroll_deadline: Mapped[str]
    price_cents: Mapped[int]


class Module(Base):
    __tablename__ = "modules"
    module_id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.course_id"))
    position: Mapped[int]
    title: Mapped[str]


class Lesson(Base):
    __tablename__ = "lessons"
    lesson_id: Mapped[int] = mapped_column(primary_key=True)
    module_id: Mapped[int] = mapped_column(ForeignKey("modules.module_id"))
    position: Mapped[int]
    title: Mapped[str]
    duration_min: Mapped[int]


class Enrollment(Base):
    __tablename__ = "enrollments"
    enrollment_id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.course_id"))
    status: Mapped[str]
    enrolled_at: Mapped[str]
    completed_at: Mapped[str | None]


class LessonCompletion(Base):
    __tablename__ = "lesson_completions"
    completion_id: Mapped[int] = mapped_column(primary_key=True)
    enrollment_id: Mapped[int] = mapped_column(ForeignKey("enrollments.enrollment_id"))
    lesson_id: Mapped[int] = mapped_column(ForeignKey("lessons.lesson_id"))
    completed_at: Mapped[str]


class Quiz(Base):
    __tablename__ = "quizzes"
    quiz_id: Mapped[int] = mapped_column(primary_key=True)
    module_id: Mapped[int] = mapped_column(ForeignKey("modules.module_id"))
    title: Mapped[str]
    pass_pct: Mapped[int]
    max_attempts: Mapped[int]


class QuizQuestion(Base):
    __tablename__ = "quiz_questions"
    question_id: Mapped[int] = mapped_column(primary_key=True)
    quiz_id: Mapped[int] = mapped_column(ForeignKey("quizzes.quiz_id"))
    position: Mapped[int]
    prompt: Mapped[str]
    choices: Mapped[str]
    answer: Mapped[str]


class QuizAttempt(Base):
    __tablename__ = "quiz_attempts"
    attempt_id: Mapped[int] = mapped_column(primary_key=True)
    quiz_id: Mapped[int] = mapped_column(ForeignKey("quizzes.quiz_id"))
    enrollment_id: Mapped[int] = mapped_column(ForeignKey("enrollments.enrollment_id"))
    answers: Mapped[str]
    score_pct: Mapped[int]
    passed: Mapped[int]
    submitted_at: Mapped[str]


class Certificate(Base):
    __tablename__ = "certificates"
    certificate_id: Mapped[int] = mapped_column(primary_key=True)
    enrollment_id: Mapped[int] = mapped_column(ForeignKey("enrollments.enrollment_id"))
    code: Mapped[str]
    issued_at: Mapped[str]


class Review(Base):
    __tablename__ = "reviews"
    review_id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.course_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    rating: Mapped[int]
    comment: Mapped[str]
    created_at: Mapped[str]
    updated_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only for serving the app on its own; the awm runtime overrides get_db.
    return create_engine(f"sqlite:///{os.environ.get('LEARNING_DB', 'learning.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Learning platform",
    description="Courses, enrollments, lesson progress, quizzes, certificates and reviews "
    "for the logged-in learner (user 1).",
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
    joined_at: str


class CourseOut(BaseModel):
    course_id: int
    code: str
    title: str
    category: str
    level: str
    instructor_id: int
    instructor_name: str
    status: str
    starts_on: str
    enroll_deadline: str
    capacity: int
    seats_left: int
    price_cents: int
    average_rating: float | None
    review_count: int


class CoursePage(BaseModel):
    items: list[CourseOut]
    total: int
    next_cursor: str | None


class LessonOut(BaseModel):
    lesson_id: int
    module_id: int
    position: int
    title: str
    duration_min: int


class ModuleOut(BaseModel):
    module_id: int
    position: int
    title: str
    quiz_id: int | None
    lessons: list[LessonOut]


class CourseDetailOut(CourseOut):
    modules: list[ModuleOut]
    my_enrollment_status: str | None


class InstructorOut(BaseModel):
    instructor_id: int
    name: str
    headline: str
    courses: list[CourseOut]


class EnrollmentOut(BaseModel):
    enrollment_id: int
    course_id: int
    course_code: str
    course_title: str
    status: str
    enrolled_at: str
    completed_at: str | None


class EnrollmentList(BaseModel):
    items: list[EnrollmentOut]
    total: int


class LessonProgress(BaseModel):
    lesson_id: int
    title: str
    completed: bool
    completed_at: str | None


class ModuleProgress(BaseModel):
    module_id: int
    position: int
    title: str
    lessons: list[LessonProgress]
    quiz_id: int | None
    quiz_passed: bool


class ProgressOut(BaseModel):
    course_id: int
    course_title: str
    enrollment_status: str
    lessons_completed: int
    lessons_total: int
    percent_complete: int
    quizzes_passed: int
    quizzes_total: int
    certificate_eligible: bool
    modules: list[ModuleProgress]


class CompletionOut(BaseModel):
    lesson_id: int
    course_id: int
    completed_at: str
    lessons_completed: int
    lessons_total: int


class QuizSummary(BaseModel):
    quiz_id: int
    module_id: int
    module_position: int
    title: str
    question_count: int
    pass_pct: int
    max_attempts: int
    attempts_used: int
    attempts_left: int
    best_score_pct: int | None
    passed: bool


class QuizList(BaseModel):
    items: list[QuizSummary]
    total: int


class QuestionOut(BaseModel):
    position: int
    prompt: str
    choices: str


class QuizDetailOut(QuizSummary):
    questions: list[QuestionOut]


class AttemptIn(BaseModel):
    answers: list[str] = Field(
        description="One letter (A-D) per question, in question order, e.g. ['B', 'D', 'A', 'C', 'A']"
    )


class AttemptOut(BaseModel):
    attempt_id: int
    quiz_id: int
    course_id: int
    score_pct: int
    passed: bool
    submitted_at: str
    attempts_left: int


class AttemptList(BaseModel):
    items: list[AttemptOut]
    total: int


class CertificateOut(BaseModel):
    certificate_id: int
    course_id: int
    course_title: str
    code: str
    issued_at: str


class CertificateList(BaseModel):
    items: list[CertificateOut]
    total: int


class ReviewOut(BaseModel):
    review_id: int
    course_id: int
    reviewer_name: str
    rating: int
    comment: str
    created_at: str
    updated_at: str


class ReviewPage(BaseModel):
    items: list[ReviewOut]
    total: int
    next_cursor: str | None


class ReviewIn(BaseModel):
    course_id: int
    rating: int = Field(ge=1, le=5)
    comment: str = Field(default="", max_length=1000)


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


def _check_date(value: str | None, name: str) -> None:
    if value is None:
        return
    if (
        len(value) != 10
        or value[4] != "-"
        or value[7] != "-"
        or not value.replace("-", "").isdigit()
    ):
        raise HTTPException(400, f"{name} must be a date YYYY-MM-DD, got {value!r}.")


def _seats_taken(db: Session, course_id: int) -> int:
    return (
        db.scalar(
            select(func.count())
            .select_from(Enrollment)
            .where(Enrollment.course_id == course_id, Enrollment.status.in_(SEAT_HOLDING))
        )
        or 0
    )


def _course_out(db: Session, c: Course) -> CourseOut:
    avg, n = db.execute(
        select(func.avg(Review.rating), func.count()).where(Review.course_id == c.course_id)
    ).one()
    return CourseOut(
        course_id=c.course_id,
        code=c.code,
        title=c.title,
        category=c.category,
        level=c.level,
        instructor_id=c.instructor_id,
        instructor_name=db.get(Instructor, c.instructor_id).name,
        status=c.status,
        starts_on=c.starts_on,
        enroll_deadline=c.enroll_deadline,
        capacity=c.capacity,
        seats_left=max(0, c.capacity - _seats_taken(db, c.course_id)),
        price_cents=c.price_cents,
        average_rating=round(float(avg), 2) if avg is not None else None,
        review_count=n,
    )


def _course(db: Session, course_id: int) -> Course:
    c = db.get(Course, course_id)
    if c is None:
        raise HTTPException(404, f"Course {course_id} not found; find courses with search_courses.")
    return c


def _my_enrollment(db: Session, course_id: int) -> Enrollment | None:
    return db.scalar(
        select(Enrollment).where(
            Enrollment.user_id == CURRENT_USER_ID, Enrollment.course_id == course_id
        )
    )


def _active_enrollment(db: Session, course_id: int) -> Enrollment:
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is None:
        raise HTTPException(
            409, f"You are not enrolled in course {course_id} ({c.title}); use enroll_in_course."
        )
    if e.status != "active":
        hint = {
            "completed": "you already completed it",
            "dropped": "you dropped it; enroll_in_course re-activates it",
            "waitlisted": "you are only on its waitlist",
        }[e.status]
        raise HTTPException(
            409, f"Your enrollment in course {course_id} ({c.title}) is {e.status}: {hint}."
        )
    return e


def _enrollment_out(db: Session, e: Enrollment) -> EnrollmentOut:
    c = db.get(Course, e.course_id)
    return EnrollmentOut(
        enrollment_id=e.enrollment_id,
        course_id=c.course_id,
        course_code=c.code,
        course_title=c.title,
        status=e.status,
        enrolled_at=e.enrolled_at,
        completed_at=e.completed_at,
    )


def _modules(db: Session, course_id: int) -> list[Module]:
    return list(
        db.scalars(select(Module).where(Module.course_id == course_id).order_by(Module.position))
    )


def _lessons(db: Session, module_id: int) -> list[Lesson]:
    return list(
        db.scalars(select(Lesson).where(Lesson.module_id == module_id).order_by(Lesson.position))
    )


def _quiz_of(db: Session, module_id: int) -> Quiz | None:
    return db.scalar(select(Quiz).where(Quiz.module_id == module_id))


def _attempts(db: Session, enrollment_id: int | None, quiz_id: int) -> list[QuizAttempt]:
    if enrollment_id is None:
        return []
    return list(
        db.scalars(
            select(QuizAttempt)
            .where(QuizAttempt.enrollment_id == enrollment_id, QuizAttempt.quiz_id == quiz_id)
            .order_by(QuizAttempt.attempt_id)
        )
    )


def _quiz_summary(db: Session, q: Quiz, enrollment_id: int | None) -> QuizSummary:
    m = db.get(Module, q.module_id)
    tries = _attempts(db, enrollment_id, q.quiz_id)
    n = db.scalar(select(func.count()).where(QuizQuestion.quiz_id == q.quiz_id)) or 0
    return QuizSummary(
        quiz_id=q.quiz_id,
        module_id=m.module_id,
        module_position=m.position,
        title=q.title,
        question_count=n,
        pass_pct=q.pass_pct,
        max_attempts=q.max_attempts,
        attempts_used=len(tries),
        attempts_left=max(0, q.max_attempts - len(tries)),
        best_score_pct=max((t.score_pct for t in tries), default=None),
        passed=any(t.passed for t in tries),
    )


def _progress(db: Session, c: Course, e: Enrollment) -> ProgressOut:
    done = {
        lc.lesson_id: lc.completed_at
        for lc in db.scalars(
            select(LessonCompletion).where(LessonCompletion.enrollment_id == e.enrollment_id)
        )
    }
    modules = []
    for m in _modules(db, c.course_id):
        q = _quiz_of(db, m.module_id)
        modules.append(
            ModuleProgress(
                module_id=m.module_id,
                position=m.position,
                title=m.title,
                lessons=[
                    LessonProgress(
                        lesson_id=lesson.lesson_id,
                        title=lesson.title,
                        completed=lesson.lesson_id in done,
                        completed_at=done.get(lesson.lesson_id),
                    )
                    for lesson in _lessons(db, m.module_id)
                ],
                quiz_id=q.quiz_id if q else None,
                quiz_passed=bool(q) and _quiz_summary(db, q, e.enrollment_id).passed,
            )
        )
    total = sum(len(m.lessons) for m in modules)
    completed = sum(lp.completed for m in modules for lp in m.lessons)
    quizzes = [m for m in modules if m.quiz_id is not None]
    passed = sum(m.quiz_passed for m in quizzes)
    return ProgressOut(
        course_id=c.course_id,
        course_title=c.title,
        enrollment_status=e.status,
        lessons_completed=completed,
        lessons_total=total,
        percent_complete=completed * 100 // total if total else 0,
        quizzes_passed=passed,
        quizzes_total=len(quizzes),
        certificate_eligible=e.status == "active" and completed == total and passed == len(quizzes),
        modules=modules,
    )


def _attempt_out(db: Session, a: QuizAttempt) -> AttemptOut:
    q = db.get(Quiz, a.quiz_id)
    m = db.get(Module, q.module_id)
    used = len(_attempts(db, a.enrollment_id, a.quiz_id))
    return AttemptOut(
        attempt_id=a.attempt_id,
        quiz_id=a.quiz_id,
        course_id=m.course_id,
        score_pct=a.score_pct,
        passed=bool(a.passed),
        submitted_at=a.submitted_at,
        attempts_left=max(0, q.max_attempts - used),
    )


def _certificate_out(db: Session, cert: Certificate) -> CertificateOut:
    e = db.get(Enrollment, cert.enrollment_id)
    c = db.get(Course, e.course_id)
    return CertificateOut(
        certificate_id=cert.certificate_id,
        course_id=c.course_id,
        course_title=c.title,
        code=cert.code,
        issued_at=cert.issued_at,
    )


def _review_out(db: Session, r: Review) -> ReviewOut:
    return ReviewOut(
        review_id=r.review_id,
        course_id=r.course_id,
        reviewer_name=db.get(User, r.user_id).name,
        rating=r.rating,
        comment=r.comment,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def _my_review(db: Session, review_id: int) -> Review:
    r = db.get(Review, review_id)
    if r is None or r.user_id != CURRENT_USER_ID:
        mine = list(db.scalars(select(Review.review_id).where(Review.user_id == CURRENT_USER_ID)))
        raise HTTPException(
            404,
            f"Review {review_id} is not one of your reviews (yours: {mine}); see list_my_reviews.",
        )
    return r


# --------------------------------------------------------------------------- tools: time, profile, catalogue


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The platform's current date and time (UTC); enrollment deadlines are compared with it."""
    return CurrentTimeOut(current_time=REFERENCE_TIME, today=TODAY)


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """The logged-in learner's profile."""
    u = db.get(User, CURRENT_USER_ID)
    return ProfileOut(user_id=u.user_id, name=u.name, email=u.email, joined_at=u.joined_at)


@app.get("/courses", operation_id="search_courses", response_model=CoursePage)
def search_courses(
    query: str | None = Query(default=None, description="Words in the title or the course code"),
    category: Category | None = None,
    level: Level | None = None,
    instructor: str | None = Query(default=None, description="Part of the instructor's name"),
    starts_from: str | None = Query(default=None, description="Earliest start date, YYYY-MM-DD"),
    starts_until: str | None = Query(default=None, description="Latest start date, YYYY-MM-DD"),
    open_only: bool = Query(
        default=False, description="Only courses with free seats whose deadline has not passed"
    ),
    include_archived: bool = False,
    limit: int = Query(default=5, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> CoursePage:
    """Search the course catalogue, ordered by start date; paginated (pass next_cursor for more)."""
    _check_date(starts_from, "starts_from")
    _check_date(starts_until, "starts_until")
    offset = _parse_cursor(cursor)
    stmt = select(Course).join(Instructor, Instructor.instructor_id == Course.instructor_id)
    if not include_archived:
        stmt = stmt.where(Course.status == "published")
    if query:
        q = f"%{query.strip().lower()}%"
        stmt = stmt.where(or_(func.lower(Course.title).like(q), func.lower(Course.code).like(q)))
    if category:
        stmt = stmt.where(Course.category == category)
    if level:
        stmt = stmt.where(Course.level == level)
    if instructor:
        stmt = stmt.where(func.lower(Instructor.name).like(f"%{instructor.strip().lower()}%"))
    if starts_from:
        stmt = stmt.where(Course.starts_on >= starts_from)
    if starts_until:
        stmt = stmt.where(Course.starts_on <= starts_until)
    rows = list(db.scalars(stmt.order_by(Course.starts_on, Course.course_id)))
    items = [_course_out(db, c) for c in rows]
    if open_only:
        items = [
            i
            for i in items
            if i.seats_left > 0 and i.enroll_deadline >= TODAY and i.status == "published"
        ]
    return CoursePage(
        items=items[offset : offset + limit],
        total=len(items),
        next_cursor=_next_cursor(offset, limit, len(items)),
    )


@app.get("/courses/{course_id}", operation_id="get_course", response_model=CourseDetailOut)
def get_course(course_id: int, db: Session = Depends(get_db)) -> CourseDetailOut:
    """One course with its outline (modules, lessons, quiz ids) and your enrollment status."""
    c = _course(db, course_id)
    modules = []
    for m in _modules(db, course_id):
        q = _quiz_of(db, m.module_id)
        modules.append(
            ModuleOut(
                module_id=m.module_id,
                position=m.position,
                title=m.title,
                quiz_id=q.quiz_id if q else None,
                lessons=[
                    LessonOut(
                        lesson_id=lesson.lesson_id,
                        module_id=lesson.module_id,
                        position=lesson.position,
                        title=lesson.title,
                        duration_min=lesson.duration_min,
                    )
                    for lesson in _lessons(db, m.module_id)
                ],
            )
        )
    e = _my_enrollment(db, course_id)
    return CourseDetailOut(
        **_course_out(db, c).model_dump(),
        modules=modules,
        my_enrollment_status=e.status if e else None,
    )


@app.get("/lessons/{lesson_id}", operation_id="get_lesson", response_model=LessonOut)
def get_lesson(lesson_id: int, db: Session = Depends(get_db)) -> LessonOut:
    """One lesson."""
    lesson = db.get(Lesson, lesson_id)
    if lesson is None:
        raise HTTPException(
            404, f"Lesson {lesson_id} not found; get_course lists a course's lessons."
        )
    return LessonOut(
        lesson_id=lesson.lesson_id,
        module_id=lesson.module_id,
        position=lesson.position,
        title=lesson.title,
        duration_min=lesson.duration_min,
    )


@app.get(
    "/instructors/{instructor_id}", operation_id="get_instructor", response_model=InstructorOut
)
def get_instructor(instructor_id: int, db: Session = Depends(get_db)) -> InstructorOut:
    """An instructor and the published courses they teach."""
    i = db.get(Instructor, instructor_id)
    if i is None:
        raise HTTPException(
            404, f"Instructor {instructor_id} not found; search_courses shows instructor ids."
        )
    courses = db.scalars(
        select(Course)
        .where(Course.instructor_id == instructor_id, Course.status == "published")
        .order_by(Course.starts_on, Course.course_id)
    )
    return InstructorOut(
        instructor_id=i.instructor_id,
        name=i.name,
        headline=i.headline,
        courses=[_course_out(db, c) for c in courses],
    )


# --------------------------------------------------------------------------- tools: enrollments


@app.get("/me/enrollments", operation_id="list_my_enrollments", response_model=EnrollmentList)
def list_my_enrollments(
    status: EnrollmentStatus | None = None, db: Session = Depends(get_db)
) -> EnrollmentList:
    """Your enrollments (active, completed, dropped, waitlisted), optionally filtered by status."""
    stmt = select(Enrollment).where(Enrollment.user_id == CURRENT_USER_ID)
    if status:
        stmt = stmt.where(Enrollment.status == status)
    items = [_enrollment_out(db, e) for e in db.scalars(stmt.order_by(Enrollment.enrollment_id))]
    return EnrollmentList(items=items, total=len(items))


@app.post(
    "/courses/{course_id}/enroll", operation_id="enroll_in_course", response_model=EnrollmentOut
)
def enroll_in_course(course_id: int, db: Session = Depends(get_db)) -> EnrollmentOut:
    """Enroll in a published course that has a free seat and whose enrollment deadline has not passed."""
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is not None and e.status in ("active", "completed"):
        raise HTTPException(409, f"You are already {e.status} in course {course_id} ({c.title}).")
    if c.status != "published":
        raise HTTPException(
            409, f"Course {course_id} ({c.title}) is {c.status} and takes no enrollments."
        )
    if c.enroll_deadline < TODAY:
        raise HTTPException(
            409,
            f"Enrollment for course {course_id} ({c.title}) closed on {c.enroll_deadline}; "
            f"today is {TODAY}.",
        )
    taken = _seats_taken(db, course_id)
    if taken >= c.capacity:
        raise HTTPException(
            409,
            f"Course {course_id} ({c.title}) is full ({taken}/{c.capacity} seats); "
            + (
                "you are already on its waitlist."
                if e is not None and e.status == "waitlisted"
                else "use join_waitlist to wait for a seat."
            ),
        )
    if e is None:
        e = Enrollment(
            user_id=CURRENT_USER_ID,
            course_id=course_id,
            status="active",
            enrolled_at=REFERENCE_TIME,
        )
        db.add(e)
    else:  # dropped or waitlisted: the same enrollment comes back
        e.status = "active"
        e.enrolled_at = REFERENCE_TIME
        e.completed_at = None
    db.commit()
    return _enrollment_out(db, e)


@app.post(
    "/courses/{course_id}/waitlist", operation_id="join_waitlist", response_model=EnrollmentOut
)
def join_waitlist(course_id: int, db: Session = Depends(get_db)) -> EnrollmentOut:
    """Join the waitlist of a full course (only full courses have a waitlist)."""
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is not None and e.status != "dropped":
        raise HTTPException(
            409, f"Your enrollment in course {course_id} ({c.title}) is already {e.status}."
        )
    if c.status != "published" or c.enroll_deadline < TODAY:
        raise HTTPException(
            409,
            f"Course {course_id} ({c.title}) takes no enrollments (status {c.status}, deadline {c.enroll_deadline}).",
        )
    if _seats_taken(db, course_id) < c.capacity:
        raise HTTPException(
            409, f"Course {course_id} ({c.title}) still has free seats; use enroll_in_course."
        )
    if e is None:
        e = Enrollment(
            user_id=CURRENT_USER_ID,
            course_id=course_id,
            status="waitlisted",
            enrolled_at=REFERENCE_TIME,
        )
        db.add(e)
    else:
        e.status = "waitlisted"
        e.enrolled_at = REFERENCE_TIME
    db.commit()
    return _enrollment_out(db, e)


@app.post("/courses/{course_id}/drop", operation_id="drop_course", response_model=EnrollmentOut)
def drop_course(course_id: int, db: Session = Depends(get_db)) -> EnrollmentOut:
    """Drop an active course or leave a waitlist. Progress is kept if you re-enroll later."""
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is None or e.status not in ("active", "waitlisted"):
        state = e.status if e else "not enrolled"
        raise HTTPException(
            409,
            f"Nothing to drop: your status in course {course_id} ({c.title}) is {state}; "
            "only active enrollments and waitlist places can be dropped.",
        )
    e.status = "dropped"
    db.commit()
    return _enrollment_out(db, e)


# --------------------------------------------------------------------------- tools: progress


@app.get(
    "/courses/{course_id}/progress", operation_id="get_course_progress", response_model=ProgressOut
)
def get_course_progress(course_id: int, db: Session = Depends(get_db)) -> ProgressOut:
    """Your progress in a course: every lesson (done or not), quizzes passed, certificate eligibility."""
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is None or e.status == "waitlisted":
        raise HTTPException(
            409,
            f"You have no progress in course {course_id} ({c.title}): you are "
            f"{e.status if e else 'not enrolled'}.",
        )
    return _progress(db, c, e)


@app.post(
    "/lessons/{lesson_id}/complete",
    operation_id="mark_lesson_complete",
    response_model=CompletionOut,
)
def mark_lesson_complete(lesson_id: int, db: Session = Depends(get_db)) -> CompletionOut:
    """Mark a lesson of one of your active courses as completed."""
    lesson = db.get(Lesson, lesson_id)
    if lesson is None:
        raise HTTPException(
            404, f"Lesson {lesson_id} not found; get_course_progress lists lesson ids."
        )
    course_id = db.get(Module, lesson.module_id).course_id
    e = _active_enrollment(db, course_id)
    if db.scalar(
        select(LessonCompletion).where(
            LessonCompletion.enrollment_id == e.enrollment_id,
            LessonCompletion.lesson_id == lesson_id,
        )
    ):
        raise HTTPException(409, f"Lesson {lesson_id} ({lesson.title}) is already completed.")
    db.add(
        LessonCompletion(
            enrollment_id=e.enrollment_id, lesson_id=lesson_id, completed_at=REFERENCE_TIME
        )
    )
    db.flush()
    p = _progress(db, db.get(Course, course_id), e)
    db.commit()
    return CompletionOut(
        lesson_id=lesson_id,
        course_id=course_id,
        completed_at=REFERENCE_TIME,
        lessons_completed=p.lessons_completed,
        lessons_total=p.lessons_total,
    )


# --------------------------------------------------------------------------- tools: quizzes


@app.get("/courses/{course_id}/quizzes", operation_id="list_quizzes", response_model=QuizList)
def list_quizzes(course_id: int, db: Session = Depends(get_db)) -> QuizList:
    """A course's module quizzes with your attempts used and left, best score and pass status."""
    _course(db, course_id)
    e = _my_enrollment(db, course_id)
    items = []
    for m in _modules(db, course_id):
        q = _quiz_of(db, m.module_id)
        if q:
            items.append(_quiz_summary(db, q, e.enrollment_id if e else None))
    return QuizList(items=items, total=len(items))


@app.get("/quizzes/{quiz_id}", operation_id="get_quiz", response_model=QuizDetailOut)
def get_quiz(quiz_id: int, db: Session = Depends(get_db)) -> QuizDetailOut:
    """A quiz's questions and choices (never the answers) and your attempts on it."""
    q = db.get(Quiz, quiz_id)
    if q is None:
        raise HTTPException(
            404, f"Quiz {quiz_id} not found; list_quizzes shows a course's quizzes."
        )
    course_id = db.get(Module, q.module_id).course_id
    e = _my_enrollment(db, course_id)
    questions = db.scalars(
        select(QuizQuestion).where(QuizQuestion.quiz_id == quiz_id).order_by(QuizQuestion.position)
    )
    return QuizDetailOut(
        **_quiz_summary(db, q, e.enrollment_id if e else None).model_dump(),
        questions=[
            QuestionOut(position=x.position, prompt=x.prompt, choices=x.choices) for x in questions
        ],
    )


@app.post(
    "/quizzes/{quiz_id}/attempts", operation_id="submit_quiz_attempt", response_model=AttemptOut
)
def submit_quiz_attempt(quiz_id: int, body: AttemptIn, db: Session = Depends(get_db)) -> AttemptOut:
    """Submit answers to a quiz of an active course; it is graded at once. Limited attempts per quiz."""
    q = db.get(Quiz, quiz_id)
    if q is None:
        raise HTTPException(
            404, f"Quiz {quiz_id} not found; list_quizzes shows a course's quizzes."
        )
    course_id = db.get(Module, q.module_id).course_id
    e = _active_enrollment(db, course_id)
    key = [
        x.answer
        for x in db.scalars(
            select(QuizQuestion)
            .where(QuizQuestion.quiz_id == quiz_id)
            .order_by(QuizQuestion.position)
        )
    ]
    answers = [a.strip().upper() for a in body.answers]
    if len(answers) != len(key):
        raise HTTPException(
            400, f"Quiz {quiz_id} has {len(key)} questions; you sent {len(answers)} answers."
        )
    bad = [a for a in answers if a not in ("A", "B", "C", "D")]
    if bad:
        raise HTTPException(400, f"Answers must be letters A-D; got {bad}.")
    summary = _quiz_summary(db, q, e.enrollment_id)
    if summary.passed:
        raise HTTPException(
            409,
            f"You already passed quiz {quiz_id} (best score {summary.best_score_pct}%); no retake needed.",
        )
    if summary.attempts_left <= 0:
        raise HTTPException(
            409,
            f"You have used all {q.max_attempts} attempts on quiz {quiz_id} ({q.title}); "
            "no more attempts are allowed.",
        )
    score = sum(a == k for a, k in zip(answers, key, strict=True)) * 100 // len(key)
    a = QuizAttempt(
        quiz_id=quiz_id,
        enrollment_id=e.enrollment_id,
        answers=",".join(answers),
        score_pct=score,
        passed=int(score >= q.pass_pct),
        submitted_at=REFERENCE_TIME,
    )
    db.add(a)
    db.commit()
    return _attempt_out(db, a)


@app.get("/me/quiz-attempts", operation_id="list_my_quiz_attempts", response_model=AttemptList)
def list_my_quiz_attempts(
    course_id: int | None = Query(default=None, description="Only attempts in this course"),
    db: Session = Depends(get_db),
) -> AttemptList:
    """Your graded quiz attempts, oldest first."""
    stmt = (
        select(QuizAttempt)
        .join(Enrollment, Enrollment.enrollment_id == QuizAttempt.enrollment_id)
        .where(Enrollment.user_id == CURRENT_USER_ID)
    )
    if course_id is not None:
        _course(db, course_id)
        stmt = stmt.where(Enrollment.course_id == course_id)
    items = [_attempt_out(db, a) for a in db.scalars(stmt.order_by(QuizAttempt.attempt_id))]
    return AttemptList(items=items, total=len(items))


# --------------------------------------------------------------------------- tools: certificates


@app.post(
    "/courses/{course_id}/certificate",
    operation_id="claim_certificate",
    response_model=CertificateOut,
)
def claim_certificate(course_id: int, db: Session = Depends(get_db)) -> CertificateOut:
    """Finish an active course and get its certificate: every lesson must be completed and every quiz passed."""
    c = _course(db, course_id)
    e = _my_enrollment(db, course_id)
    if e is not None and e.status == "completed":
        raise HTTPException(
            409, f"You already completed course {course_id} ({c.title}); see list_my_certificates."
        )
    e = _active_enrollment(db, course_id)
    p = _progress(db, c, e)
    if not p.certificate_eligible:
        missing = [lp.lesson_id for m in p.modules for lp in m.lessons if not lp.completed]
        failing = [m.quiz_id for m in p.modules if m.quiz_id is not None and not m.quiz_passed]
        raise HTTPException(
            409,
            f"Course {course_id} ({c.title}) is not finished: lessons still to complete {missing}, "
            f"quizzes still to pass {failing}.",
        )
    e.status = "completed"
    e.completed_at = REFERENCE_TIME
    cert = Certificate(
        enrollment_id=e.enrollment_id,
        code=f"CERT-{c.code}-{CURRENT_USER_ID:04d}",
        issued_at=REFERENCE_TIME,
    )
    db.add(cert)
    db.commit()
    return _certificate_out(db, cert)


@app.get("/me/certificates", operation_id="list_my_certificates", response_model=CertificateList)
def list_my_certificates(db: Session = Depends(get_db)) -> CertificateList:
    """Your certificates."""
    rows = db.scalars(
        select(Certificate)
        .join(Enrollment, Enrollment.enrollment_id == Certificate.enrollment_id)
        .where(Enrollment.user_id == CURRENT_USER_ID)
        .order_by(Certificate.certificate_id)
    )
    items = [_certificate_out(db, cert) for cert in rows]
    return CertificateList(items=items, total=len(items))


# --------------------------------------------------------------------------- tools: reviews


@app.get(
    "/courses/{course_id}/reviews", operation_id="list_course_reviews", response_model=ReviewPage
)
def list_course_reviews(
    course_id: int,
    min_rating: int | None = Query(default=None, ge=1, le=5),
    max_rating: int | None = Query(default=None, ge=1, le=5),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> ReviewPage:
    """Reviews of a course, newest first; paginated."""
    _course(db, course_id)
    offset = _parse_cursor(cursor)
    stmt = select(Review).where(Review.course_id == course_id)
    if min_rating is not None:
        stmt = stmt.where(Review.rating >= min_rating)
    if max_rating is not None:
        stmt = stmt.where(Review.rating <= max_rating)
    total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = db.scalars(
        stmt.order_by(Review.updated_at.desc(), Review.review_id.desc()).offset(offset).limit(limit)
    )
    return ReviewPage(
        items=[_review_out(db, r) for r in rows],
        total=total,
        next_cursor=_next_cursor(offset, limit, total),
    )


@app.get("/me/reviews", operation_id="list_my_reviews", response_model=ReviewPage)
def list_my_reviews(db: Session = Depends(get_db)) -> ReviewPage:
    """Every review you wrote."""
    rows = db.scalars(
        select(Review).where(Review.user_id == CURRENT_USER_ID).order_by(Review.review_id)
    )
    items = [_review_out(db, r) for r in rows]
    return ReviewPage(items=items, total=len(items), next_cursor=None)


@app.post("/reviews", operation_id="post_course_review", response_model=ReviewOut)
def post_course_review(body: ReviewIn, db: Session = Depends(get_db)) -> ReviewOut:
    """Review a course you are taking or have completed (one review per course; edit it with update_review)."""
    c = _course(db, body.course_id)
    e = _my_enrollment(db, body.course_id)
    if e is None or e.status not in ("active", "completed"):
        raise HTTPException(
            403,
            f"Only learners taking or having completed course {c.course_id} ({c.title}) can review it; "
            f"your status: {e.status if e else 'not enrolled'}.",
        )
    existing = db.scalar(
        select(Review).where(Review.course_id == c.course_id, Review.user_id == CURRENT_USER_ID)
    )
    if existing:
        raise HTTPException(
            409,
            f"You already reviewed course {c.course_id} (review {existing.review_id}); use update_review.",
        )
    r = Review(
        course_id=c.course_id,
        user_id=CURRENT_USER_ID,
        rating=body.rating,
        comment=body.comment.strip(),
        created_at=REFERENCE_TIME,
        updated_at=REFERENCE_TIME,
    )
    db.add(r)
    db.commit()
    return _review_out(db, r)


@app.patch("/reviews/{review_id}", operation_id="update_review", response_model=ReviewOut)
def update_review(
    review_id: int,
    rating: int | None = Query(default=None, ge=1, le=5, description="New star rating"),
    comment: str | None = Query(default=None, max_length=1000, description="New comment text"),
    db: Session = Depends(get_db),
) -> ReviewOut:
    """Change the rating and/or comment of one of your reviews."""
    r = _my_review(db, review_id)
    if rating is None and comment is None:
        raise HTTPException(400, "Pass rating, comment or both.")
    if rating is not None:
        r.rating = rating
    if comment is not None:
        r.comment = comment.strip()
    r.updated_at = REFERENCE_TIME
    db.commit()
    return _review_out(db, r)


@app.delete("/reviews/{review_id}", operation_id="delete_review", response_model=ReviewOut)
def delete_review(review_id: int, db: Session = Depends(get_db)) -> ReviewOut:
    """Delete one of your reviews."""
    r = _my_review(db, review_id)
    out = _review_out(db, r)
    db.delete(r)
    db.commit()
    return out
