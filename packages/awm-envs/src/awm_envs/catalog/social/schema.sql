-- Social network: one logged-in member (user 1) among many.
-- Times are ISO-8601 UTC strings.

CREATE TABLE users (
    user_id       INTEGER PRIMARY KEY,
    handle        TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    bio           TEXT NOT NULL DEFAULT '',
    is_private    INTEGER NOT NULL DEFAULT 0 CHECK (is_private IN (0, 1)),
    joined_at     TEXT NOT NULL
);

CREATE TABLE follows (
    follow_id    INTEGER PRIMARY KEY,
    follower_id  INTEGER NOT NULL REFERENCES users(user_id),
    followee_id  INTEGER NOT NULL REFERENCES users(user_id),
    status       TEXT NOT NULL CHECK (status IN ('active', 'pending')),
    created_at   TEXT NOT NULL,
    UNIQUE (follower_id, followee_id),
    CHECK (follower_id <> followee_id)
);
CREATE INDEX ix_follows_followee ON follows(followee_id, status);

CREATE TABLE blocks (
    block_id    INTEGER PRIMARY KEY,
    blocker_id  INTEGER NOT NULL REFERENCES users(user_id),
    blocked_id  INTEGER NOT NULL REFERENCES users(user_id),
    created_at  TEXT NOT NULL,
    UNIQUE (blocker_id, blocked_id)
);

CREATE TABLE groups (
    group_id     INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    description  TEXT NOT NULL,
    visibility   TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
    owner_id     INTEGER NOT NULL REFERENCES users(user_id),
    created_at   TEXT NOT NULL
);

CREATE TABLE group_members (
    membership_id  INTEGER PRIMARY KEY,
    group_id       INTEGER NOT NULL REFERENCES groups(group_id),
    user_id        INTEGER NOT NULL REFERENCES users(user_id),
    role           TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    joined_at      TEXT NOT NULL,
    UNIQUE (group_id, user_id)
);

CREATE TABLE posts (
    post_id     INTEGER PRIMARY KEY,
    author_id   INTEGER NOT NULL REFERENCES users(user_id),
    group_id    INTEGER REFERENCES groups(group_id),
    body        TEXT NOT NULL,
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'followers')),
    created_at  TEXT NOT NULL,
    edited_at   TEXT
);
CREATE INDEX ix_posts_author_created ON posts(author_id, created_at);
CREATE INDEX ix_posts_group ON posts(group_id, created_at);

CREATE TABLE comments (
    comment_id  INTEGER PRIMARY KEY,
    post_id     INTEGER NOT NULL REFERENCES posts(post_id),
    author_id   INTEGER NOT NULL REFERENCES users(user_id),
    body        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX ix_comments_post ON comments(post_id);

CREATE TABLE likes (
    like_id     INTEGER PRIMARY KEY,
    post_id     INTEGER NOT NULL REFERENCES posts(post_id),
    user_id     INTEGER NOT NULL REFERENCES users(user_id),
    created_at  TEXT NOT NULL,
    UNIQUE (post_id, user_id)
);

CREATE TABLE messages (
    message_id    INTEGER PRIMARY KEY,
    sender_id     INTEGER NOT NULL REFERENCES users(user_id),
    recipient_id  INTEGER NOT NULL REFERENCES users(user_id),
    body          TEXT NOT NULL,
    sent_at       TEXT NOT NULL
);
CREATE INDEX ix_messages_pair ON messages(sender_id, recipient_id, sent_at);
