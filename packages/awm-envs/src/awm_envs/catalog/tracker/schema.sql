-- Project tracker: one logged-in user (user 1) with different roles in different projects.
-- Times are ISO-8601 UTC strings; dates are YYYY-MM-DD. Durations are minutes.

CREATE TABLE users (
    user_id    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    handle     TEXT NOT NULL UNIQUE,
    title      TEXT NOT NULL,
    is_active  INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    email      TEXT NOT NULL UNIQUE
);

CREATE TABLE projects (
    project_id   INTEGER PRIMARY KEY,
    key          TEXT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    owner_id     INTEGER NOT NULL REFERENCES users(user_id),
    is_archived  INTEGER NOT NULL DEFAULT 0 CHECK (is_archived IN (0, 1)),
    created_at   TEXT NOT NULL
);

CREATE TABLE project_members (
    project_id  INTEGER NOT NULL REFERENCES projects(project_id),
    user_id     INTEGER NOT NULL REFERENCES users(user_id),
    role        TEXT NOT NULL CHECK (role IN ('owner', 'maintainer', 'developer', 'viewer')),
    joined_at   TEXT NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX ix_members_user ON project_members(user_id);

CREATE TABLE sprints (
    sprint_id   INTEGER PRIMARY KEY,
    project_id  INTEGER NOT NULL REFERENCES projects(project_id),
    name        TEXT NOT NULL,
    starts_on   TEXT NOT NULL,
    ends_on     TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('planned', 'active', 'closed')),
    UNIQUE (project_id, name)
);

CREATE TABLE labels (
    label_id    INTEGER PRIMARY KEY,
    project_id  INTEGER NOT NULL REFERENCES projects(project_id),
    name        TEXT NOT NULL,
    color       TEXT NOT NULL,
    UNIQUE (project_id, name)
);

CREATE TABLE issues (
    issue_id         INTEGER PRIMARY KEY,
    project_id       INTEGER NOT NULL REFERENCES projects(project_id),
    number           INTEGER NOT NULL,
    title            TEXT NOT NULL,
    description      TEXT NOT NULL DEFAULT '',
    type             TEXT NOT NULL CHECK (type IN ('bug', 'task', 'story')),
    status           TEXT NOT NULL CHECK (status IN ('todo', 'in_progress', 'in_review', 'done', 'wont_do')),
    priority         TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
    reporter_id      INTEGER NOT NULL REFERENCES users(user_id),
    assignee_id      INTEGER REFERENCES users(user_id),
    sprint_id        INTEGER REFERENCES sprints(sprint_id),
    estimate_points  INTEGER CHECK (estimate_points IS NULL OR estimate_points >= 0),
    due_date         TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    closed_at        TEXT,
    UNIQUE (project_id, number)
);
CREATE INDEX ix_issues_project_status ON issues(project_id, status);
CREATE INDEX ix_issues_assignee ON issues(assignee_id);
CREATE INDEX ix_issues_sprint ON issues(sprint_id);

CREATE TABLE issue_labels (
    issue_id  INTEGER NOT NULL REFERENCES issues(issue_id),
    label_id  INTEGER NOT NULL REFERENCES labels(label_id),
    PRIMARY KEY (issue_id, label_id)
);
CREATE INDEX ix_issue_labels_label ON issue_labels(label_id);

CREATE TABLE issue_links (
    link_id           INTEGER PRIMARY KEY,
    blocker_issue_id  INTEGER NOT NULL REFERENCES issues(issue_id),
    blocked_issue_id  INTEGER NOT NULL REFERENCES issues(issue_id),
    created_at        TEXT NOT NULL,
    UNIQUE (blocker_issue_id, blocked_issue_id),
    CHECK (blocker_issue_id <> blocked_issue_id)
);

CREATE TABLE comments (
    comment_id  INTEGER PRIMARY KEY,
    issue_id    INTEGER NOT NULL REFERENCES issues(issue_id),
    author_id   INTEGER NOT NULL REFERENCES users(user_id),
    body        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX ix_comments_issue ON comments(issue_id);

CREATE TABLE time_logs (
    time_log_id  INTEGER PRIMARY KEY,
    issue_id     INTEGER NOT NULL REFERENCES issues(issue_id),
    user_id      INTEGER NOT NULL REFERENCES users(user_id),
    minutes      INTEGER NOT NULL CHECK (minutes > 0),
    logged_on    TEXT NOT NULL,
    note         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ix_time_logs_user_day ON time_logs(user_id, logged_on);
