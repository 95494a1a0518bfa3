-- Online learning platform: one logged-in learner (user 1) among many.
-- Times are ISO-8601 UTC strings; dates are YYYY-MM-DD.

CREATE TABLE users (
    user_id    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    joined_at  TEXT NOT NULL
);

CREATE TABLE instructors (
    instructor_id  INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    headline       TEXT NOT NULL,
    email          TEXT NOT NULL UNIQUE
);

CREATE TABLE courses (
    course_id        INTEGER PRIMARY KEY,
    instructor_id    INTEGER NOT NULL REFERENCES instructors(instructor_id),
    code             TEXT NOT NULL UNIQUE,
    title            TEXT NOT NULL,
    category         TEXT NOT NULL CHECK (category IN ('programming', 'data', 'design', 'business', 'languages')),
    level            TEXT NOT NULL CHECK (level IN ('beginner', 'intermediate', 'advanced')),
    capacity         INTEGER NOT NULL CHECK (capacity > 0),
    status           TEXT NOT NULL CHECK (status IN ('published', 'archived')),
    starts_on        TEXT NOT NULL,
    enroll_deadline  TEXT NOT NULL,
    price_cents      INTEGER NOT NULL CHECK (price_cents >= 0)
);
CREATE INDEX ix_courses_category_level ON courses(category, level);
CREATE INDEX ix_courses_instructor ON courses(instructor_id);

CREATE TABLE modules (
    module_id  INTEGER PRIMARY KEY,
    course_id  INTEGER NOT NULL REFERENCES courses(course_id),
    position   INTEGER NOT NULL,
    title      TEXT NOT NULL,
    UNIQUE (course_id, position)
);

CREATE TABLE lessons (
    lesson_id     INTEGER PRIMARY KEY,
    module_id     INTEGER NOT NULL REFERENCES modules(module_id),
    position      INTEGER NOT NULL,
    title         TEXT NOT NULL,
    duration_min  INTEGER NOT NULL CHECK (duration_min > 0),
    UNIQUE (module_id, position)
);

CREATE TABLE enrollments (
    enrollment_id  INTEGER PRIMARY KEY,
    user_id        INTEGER NOT NULL REFERENCES users(user_id),
    course_id      INTEGER NOT NULL REFERENCES courses(course_id),
    status         TEXT NOT NULL CHECK (status IN ('active', 'completed', 'dropped', 'waitlisted')),
    enrolled_at    TEXT NOT NULL,
    completed_at   TEXT,
    UNIQUE (user_id, course_id)
);
CREATE INDEX ix_enrollments_course_status ON enrollments(course_id, status);

CREATE TABLE lesson_completions (
    completion_id  INTEGER PRIMARY KEY,
    enrollment_id  INTEGER NOT NULL REFERENCES enrollments(enrollment_id),
    lesson_id      INTEGER NOT NULL REFERENCES lessons(lesson_id),
    completed_at   TEXT NOT NULL,
    UNIQUE (enrollment_id, lesson_id)
);

CREATE TABLE quizzes (
    quiz_id       INTEGER PRIMARY KEY,
    module_id     INTEGER NOT NULL UNIQUE REFERENCES modules(module_id),
    title         TEXT NOT NULL,
    pass_pct      INTEGER NOT NULL CHECK (pass_pct BETWEEN 1 AND 100),
    max_attempts  INTEGER NOT NULL CHECK (max_attempts > 0)
);

CREATE TABLE quiz_questions (
    question_id  INTEGER PRIMARY KEY,
    quiz_id      INTEGER NOT NULL REFERENCES quizzes(quiz_id),
    position     INTEGER NOT NULL,
    prompt       TEXT NOT NULL,
    choices      TEXT NOT NULL,
    answer       TEXT NOT NULL CHECK (answer IN ('A', 'B', 'C', 'D')),
    UNIQUE (quiz_id, position)
);

CREATE TABLE quiz_attempts (
    attempt_id     INTEGER PRIMARY KEY,
    quiz_id        INTEGER NOT NULL REFERENCES quizzes(quiz_id),
    enrollment_id  INTEGER NOT NULL REFERENCES enrollments(enrollment_id),
    answers        TEXT NOT NULL,
    score_pct      INTEGER NOT NULL CHECK (score_pct BETWEEN 0 AND 100),
    passed         INTEGER NOT NULL CHECK (passed IN (0, 1)),
    submitted_at   TEXT NOT NULL
);
CREATE INDEX ix_quiz_attempts_enrollment ON quiz_attempts(enrollment_id, quiz_id);

CREATE TABLE certificates (
    certificate_id  INTEGER PRIMARY KEY,
    enrollment_id   INTEGER NOT NULL UNIQUE REFERENCES enrollments(enrollment_id),
    code            TEXT NOT NULL UNIQUE,
    issued_at       TEXT NOT NULL
);

CREATE TABLE reviews (
    review_id   INTEGER PRIMARY KEY,
    course_id   INTEGER NOT NULL REFERENCES courses(course_id),
    user_id     INTEGER NOT NULL REFERENCES users(user_id),
    rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment     TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (course_id, user_id)
);
CREATE INDEX ix_reviews_course ON reviews(course_id, rating);
