"""Social network: profiles, follows and follow requests, blocks, posts with
likes and comments, groups and direct messages. The logged-in member is user 1
(Theo Nakamura, a private account).

Visibility: a post is visible to the viewer when neither has blocked the other,
its group (if any) is public or the viewer is a member, and, when the author's
account is private or the post is followers-only, the viewer follows the author.
Members who blocked the viewer do not exist for the viewer. Times are ISO-8601
UTC. "Now" is REFERENCE_TIME.
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

REFERENCE_TIME = "2025-05-09T12:00:00Z"
ME = 1
MAX_PAGE = 50

Visibility = Literal["public", "followers"]


# --------------------------------------------------------------------------- models


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    user_id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str]
    display_name: Mapped[str]
    bio: Mapped[str]
    is_private: Mapped[int]
    joined_at: Mapped[str]


class Follow(Base):
    __tablename__ = "follows"
    follow_id: Mapped[int] = mapped_column(primary_key=True)
    follower_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    followee_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    status: Mapped[str]
    created_at: Mapped[str]


class Block(Base):
    __tablename__ = "blocks"
    block_id: Mapped[int] = mapped_column(primary_key=True)
    blocker_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    blocked_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    created_at: Mapped[str]


class Group(Base):
    __tablename__ = "groups"
    group_id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    description: Mapped[str]
    visibility: Mapped[str]
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    created_at: Mapped[str]


class GroupMember(Base):
    __tablename__ = "group_members"
    membership_id: Mapped[int] = mapped_column(primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.group_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    role: Mapped[str]
    joined_at: Mapped[str]


class Post(Base):
    __tablename__ = "posts"
    post_id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.group_id"))
    body: Mapped[str]
    visibility: Mapped[str]
    created_at: Mapped[str]
    edited_at: Mapped[str | None]


class Comment(Base):
    __tablename__ = "comments"
    comment_id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.post_id"))
    author_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    body: Mapped[str]
    created_at: Mapped[str]


class Like(Base):
    __tablename__ = "likes"
    like_id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.post_id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    created_at: Mapped[str]


class Message(Base):
    __tablename__ = "messages"
    message_id: Mapped[int] = mapped_column(primary_key=True)
    sender_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    recipient_id: Mapped[int] = mapped_column(ForeignKey("users.user_id"))
    body: Mapped[str]
    sent_at: Mapped[str]


# --------------------------------------------------------------------------- database


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only for serving the app on its own; the awm runtime overrides get_db.
    return create_engine(f"sqlite:///{os.environ.get('SOCIAL_DB', 'social.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(
    title="Social",
    description="A social network seen by the logged-in member (user 1).",
)


# --------------------------------------------------------------------------- schemas


class CurrentTimeOut(BaseModel):
    current_time: str
    timezone: str = "UTC"


class UserOut(BaseModel):
    user_id: int
    handle: str
    display_name: str
    bio: str
    is_private: bool
    followers_count: int
    following_count: int
    i_follow: str | None = Field(description="'active', 'pending' (request sent) or null")
    follows_me: bool
    blocked_by_me: bool
    can_view_posts: bool
    last_post_at: str | None = Field(description="Newest post you can see, or null")


class UserPage(BaseModel):
    items: list[UserOut]
    total: int
    next_cursor: str | None


class ProfileOut(BaseModel):
    user_id: int
    handle: str
    display_name: str
    bio: str
    is_private: bool
    followers_count: int
    following_count: int
    pending_requests: int
    joined_at: str


class FollowOut(BaseModel):
    user_id: int
    handle: str
    status: str = Field(description="active, pending, removed, approved or rejected")


class PostOut(BaseModel):
    post_id: int
    author_id: int
    author_handle: str
    group_id: int | None
    group_name: str | None
    body: str
    visibility: str
    created_at: str
    edited_at: str | None
    like_count: int
    comment_count: int
    liked_by_me: bool


class PostPage(BaseModel):
    items: list[PostOut]
    total: int
    next_cursor: str | None


class CommentOut(BaseModel):
    comment_id: int
    post_id: int
    author_id: int
    author_handle: str
    body: str
    created_at: str


class PostDetailOut(PostOut):
    comments: list[CommentOut]


class PostIn(BaseModel):
    body: str = Field(min_length=1, max_length=2000)
    visibility: Visibility = "followers"
    group_id: int | None = Field(default=None, description="Post into a group you belong to")


class CommentIn(BaseModel):
    body: str = Field(min_length=1, max_length=1000)


class GroupOut(BaseModel):
    group_id: int
    name: str
    description: str
    visibility: str
    owner_handle: str
    member_count: int
    my_role: str | None


class GroupList(BaseModel):
    items: list[GroupOut]
    total: int


class MessageIn(BaseModel):
    body: str = Field(min_length=1, max_length=2000)


class MessageOut(BaseModel):
    message_id: int
    sender_handle: str
    recipient_handle: str
    body: str
    sent_at: str


class Conversation(BaseModel):
    user_id: int
    handle: str
    items: list[MessageOut]
    total: int


class BlockOut(BaseModel):
    user_id: int
    handle: str
    display_name: str
    blocked_at: str


class BlockList(BaseModel):
    items: list[BlockOut]
    total: int


# --------------------------------------------------------------------------- helpers


def _parse_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit():
        raise HTTPException(
            400, f"Invalid cursor {cursor!r}: pass next_cursor from the previous page."
        )
    return int(cursor)


def _page(items: list, offset: int, limit: int) -> tuple[list, int, str | None]:
    total = len(items)
    nxt = str(offset + limit) if offset + limit < total else None
    return items[offset : offset + limit], total, nxt


def _block_between(db: Session, a: int, b: int) -> Block | None:
    return db.scalar(
        select(Block).where(
            or_(
                (Block.blocker_id == a) & (Block.blocked_id == b),
                (Block.blocker_id == b) & (Block.blocked_id == a),
            )
        )
    )


def _blocked_me(db: Session, uid: int) -> bool:
    return (
        db.scalar(select(Block).where(Block.blocker_id == uid, Block.blocked_id == ME)) is not None
    )


def _i_blocked(db: Session, uid: int) -> Block | None:
    return db.scalar(select(Block).where(Block.blocker_id == ME, Block.blocked_id == uid))


def _follow(db: Session, a: int, b: int) -> Follow | None:
    return db.scalar(select(Follow).where(Follow.follower_id == a, Follow.followee_id == b))


def _active_follow(db: Session, a: int, b: int) -> bool:
    f = _follow(db, a, b)
    return f is not None and f.status == "active"


def _user(db: Session, user_id: int) -> User:
    """A member the viewer may know about (members who blocked the viewer are hidden)."""
    u = db.get(User, user_id)
    if u is None or (user_id != ME and _blocked_me(db, user_id)):
        raise HTTPException(404, f"User {user_id} not found; find people with search_users.")
    return u


def _member(db: Session, group_id: int, uid: int = ME) -> GroupMember | None:
    return db.scalar(
        select(GroupMember).where(GroupMember.group_id == group_id, GroupMember.user_id == uid)
    )


def _can_see_posts_of(db: Session, u: User) -> bool:
    if u.user_id == ME:
        return True
    if _block_between(db, ME, u.user_id):
        return False
    return not u.is_private or _active_follow(db, ME, u.user_id)


def _can_view(db: Session, p: Post) -> bool:
    if p.author_id == ME:
        return True
    if _block_between(db, ME, p.author_id):
        return False
    if p.group_id is not None:
        g = db.get(Group, p.group_id)
        if g.visibility == "private" and _member(db, g.group_id) is None:
            return False
    author = db.get(User, p.author_id)
    if author.is_private or p.visibility == "followers":
        return _active_follow(db, ME, p.author_id)
    return True


def _visible_posts(db: Session, stmt) -> list[Post]:
    rows = db.scalars(stmt.order_by(Post.created_at.desc(), Post.post_id.desc()))
    return [p for p in rows if _can_view(db, p)]


def _count(db: Session, stmt) -> int:
    return db.scalar(select(func.count()).select_from(stmt.subquery())) or 0


def _user_out(db: Session, u: User) -> UserOut:
    f = _follow(db, ME, u.user_id)
    last = _visible_posts(db, select(Post).where(Post.author_id == u.user_id).limit(50))
    can_view = _can_see_posts_of(db, u)
    return UserOut(
        user_id=u.user_id,
        handle=u.handle,
        display_name=u.display_name,
        bio=u.bio,
        is_private=bool(u.is_private),
        followers_count=_count(
            db, select(Follow).where(Follow.followee_id == u.user_id, Follow.status == "active")
        ),
        following_count=_count(
            db, select(Follow).where(Follow.follower_id == u.user_id, Follow.status == "active")
        ),
        i_follow=f.status if f else None,
        follows_me=_active_follow(db, u.user_id, ME),
        blocked_by_me=_i_blocked(db, u.user_id) is not None,
        can_view_posts=can_view,
        last_post_at=last[0].created_at if (last and can_view) else None,
    )


def _post_out(db: Session, p: Post) -> PostOut:
    g = db.get(Group, p.group_id) if p.group_id else None
    return PostOut(
        post_id=p.post_id,
        author_id=p.author_id,
        author_handle=db.get(User, p.author_id).handle,
        group_id=p.group_id,
        group_name=g.name if g else None,
        body=p.body,
        visibility=p.visibility,
        created_at=p.created_at,
        edited_at=p.edited_at,
        like_count=_count(db, select(Like).where(Like.post_id == p.post_id)),
        comment_count=len(_comments(db, p)),
        liked_by_me=db.scalar(select(Like).where(Like.post_id == p.post_id, Like.user_id == ME))
        is not None,
    )


def _comments(db: Session, p: Post) -> list[Comment]:
    rows = db.scalars(
        select(Comment).where(Comment.post_id == p.post_id).order_by(Comment.created_at)
    )
    if p.author_id == ME:  # on your own posts you see every comment, so you can moderate
        return list(rows)
    return [c for c in rows if c.author_id == ME or not _block_between(db, ME, c.author_id)]


def _post(db: Session, post_id: int) -> Post:
    p = db.get(Post, post_id)
    if p is None or not _can_view(db, p):
        raise HTTPException(
            404, f"Post {post_id} not found or not visible to you; see get_feed or get_user_posts."
        )
    return p


def _my_post(db: Session, post_id: int) -> Post:
    p = _post(db, post_id)
    if p.author_id != ME:
        raise HTTPException(
            403,
            f"Post {post_id} belongs to @{db.get(User, p.author_id).handle}; you can only change your own posts.",
        )
    return p


def _group_out(db: Session, g: Group) -> GroupOut:
    m = _member(db, g.group_id)
    return GroupOut(
        group_id=g.group_id,
        name=g.name,
        description=g.description,
        visibility=g.visibility,
        owner_handle=db.get(User, g.owner_id).handle,
        member_count=_count(db, select(GroupMember).where(GroupMember.group_id == g.group_id)),
        my_role=m.role if m else None,
    )


def _group(db: Session, group_id: int) -> Group:
    g = db.get(Group, group_id)
    if g is None:
        raise HTTPException(404, f"Group {group_id} not found; see search_groups.")
    return g


def _message_out(db: Session, m: Message) -> MessageOut:
    return MessageOut(
        message_id=m.message_id,
        sender_handle=db.get(User, m.sender_id).handle,
        recipient_handle=db.get(User, m.recipient_id).handle,
        body=m.body,
        sent_at=m.sent_at,
    )


def _people(db: Session, ids: list[int], offset: int, limit: int) -> UserPage:
    users = [db.get(User, i) for i in ids]
    users = [u for u in users if not _blocked_me(db, u.user_id)]
    items, total, nxt = _page(users, offset, limit)
    return UserPage(items=[_user_out(db, u) for u in items], total=total, next_cursor=nxt)


# --------------------------------------------------------------------------- tools: time and profile


@app.get("/time", operation_id="get_current_time", response_model=CurrentTimeOut)
def get_current_time() -> CurrentTimeOut:
    """The current date and time (UTC); use it for 'today' and 'this week'."""
    return CurrentTimeOut(current_time=REFERENCE_TIME)


def _profile(db: Session) -> ProfileOut:
    u = db.get(User, ME)
    return ProfileOut(
        user_id=u.user_id,
        handle=u.handle,
        display_name=u.display_name,
        bio=u.bio,
        is_private=bool(u.is_private),
        followers_count=_count(
            db, select(Follow).where(Follow.followee_id == ME, Follow.status == "active")
        ),
        following_count=_count(
            db, select(Follow).where(Follow.follower_id == ME, Follow.status == "active")
        ),
        pending_requests=_count(
            db, select(Follow).where(Follow.followee_id == ME, Follow.status == "pending")
        ),
        joined_at=u.joined_at,
    )


@app.get("/me", operation_id="get_my_profile", response_model=ProfileOut)
def get_my_profile(db: Session = Depends(get_db)) -> ProfileOut:
    """Your own profile with follower counts and pending follow requests."""
    return _profile(db)


@app.patch("/me", operation_id="update_my_profile", response_model=ProfileOut)
def update_my_profile(
    display_name: str | None = Query(default=None, min_length=1, max_length=60),
    bio: str | None = Query(default=None, max_length=300),
    db: Session = Depends(get_db),
) -> ProfileOut:
    """Change your display name and/or bio."""
    if display_name is None and bio is None:
        raise HTTPException(400, "Pass display_name, bio or both.")
    u = db.get(User, ME)
    if display_name is not None:
        u.display_name = display_name.strip()
    if bio is not None:
        u.bio = bio.strip()
    db.commit()
    return _profile(db)


# --------------------------------------------------------------------------- tools: people


@app.get("/users", operation_id="search_users", response_model=UserPage)
def search_users(
    query: str = Query(min_length=1, description="Part of a handle or display name"),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> UserPage:
    """Find members by handle or name; several members can share a display name."""
    q = f"%{query.strip().lower()}%"
    ids = list(
        db.scalars(
            select(User.user_id)
            .where(
                User.user_id != ME,
                or_(func.lower(User.handle).like(q), func.lower(User.display_name).like(q)),
            )
            .order_by(User.user_id)
        )
    )
    return _people(db, ids, _parse_cursor(cursor), limit)


@app.get("/users/{user_id}", operation_id="get_user", response_model=UserOut)
def get_user(user_id: int, db: Session = Depends(get_db)) -> UserOut:
    """A member's profile and your relationship with them (follow, block, can you see their posts)."""
    return _user_out(db, _user(db, user_id))


@app.get("/me/followers", operation_id="list_my_followers", response_model=UserPage)
def list_my_followers(
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> UserPage:
    """People who follow you (approved), oldest first; paginated."""
    ids = list(
        db.scalars(
            select(Follow.follower_id)
            .where(Follow.followee_id == ME, Follow.status == "active")
            .order_by(Follow.created_at, Follow.follow_id)
        )
    )
    return _people(db, ids, _parse_cursor(cursor), limit)


@app.get("/me/following", operation_id="list_my_following", response_model=UserPage)
def list_my_following(
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> UserPage:
    """People you follow (including requests still pending), oldest first; paginated. Shows each one's last post time."""
    ids = list(
        db.scalars(
            select(Follow.followee_id)
            .where(Follow.follower_id == ME)
            .order_by(Follow.created_at, Follow.follow_id)
        )
    )
    return _people(db, ids, _parse_cursor(cursor), limit)


@app.post("/users/{user_id}/follow", operation_id="follow_user", response_model=FollowOut)
def follow_user(user_id: int, db: Session = Depends(get_db)) -> FollowOut:
    """Follow a member; for a private account this sends a follow request (status pending)."""
    u = _user(db, user_id)
    if user_id == ME:
        raise HTTPException(400, "You cannot follow yourself.")
    if _i_blocked(db, user_id):
        raise HTTPException(409, f"You blocked @{u.handle}; unblock_user first.")
    f = _follow(db, ME, user_id)
    if f:
        raise HTTPException(409, f"You already follow @{u.handle} (status {f.status}).")
    f = Follow(
        follower_id=ME,
        followee_id=user_id,
        status="pending" if u.is_private else "active",
        created_at=REFERENCE_TIME,
    )
    db.add(f)
    db.commit()
    return FollowOut(user_id=user_id, handle=u.handle, status=f.status)


@app.delete("/users/{user_id}/follow", operation_id="unfollow_user", response_model=FollowOut)
def unfollow_user(user_id: int, db: Session = Depends(get_db)) -> FollowOut:
    """Stop following a member (or withdraw a pending follow request)."""
    u = _user(db, user_id)
    f = _follow(db, ME, user_id)
    if f is None:
        raise HTTPException(409, f"You do not follow @{u.handle}.")
    db.delete(f)
    db.commit()
    return FollowOut(user_id=user_id, handle=u.handle, status="removed")


@app.get("/me/follow-requests", operation_id="list_follow_requests", response_model=UserPage)
def list_follow_requests(db: Session = Depends(get_db)) -> UserPage:
    """Pending requests to follow your private account, oldest first."""
    ids = list(
        db.scalars(
            select(Follow.follower_id)
            .where(Follow.followee_id == ME, Follow.status == "pending")
            .order_by(Follow.created_at, Follow.follow_id)
        )
    )
    return _people(db, ids, 0, MAX_PAGE)


@app.post(
    "/me/follow-requests/{user_id}",
    operation_id="respond_to_follow_request",
    response_model=FollowOut,
)
def respond_to_follow_request(
    user_id: int,
    approve: bool = Query(description="true to approve, false to reject"),
    db: Session = Depends(get_db),
) -> FollowOut:
    """Approve or reject a member's pending request to follow you."""
    u = _user(db, user_id)
    f = _follow(db, user_id, ME)
    if f is None or f.status != "pending":
        raise HTTPException(
            404, f"@{u.handle} has no pending follow request; see list_follow_requests."
        )
    if approve:
        f.status = "active"
    else:
        db.delete(f)
    db.commit()
    return FollowOut(user_id=user_id, handle=u.handle, status="approved" if approve else "rejected")


@app.post("/users/{user_id}/block", operation_id="block_user", response_model=FollowOut)
def block_user(user_id: int, db: Session = Depends(get_db)) -> FollowOut:
    """Block a member: follows in both directions (and pending requests) are removed."""
    u = _user(db, user_id)
    if user_id == ME:
        raise HTTPException(400, "You cannot block yourself.")
    if _i_blocked(db, user_id):
        raise HTTPException(409, f"@{u.handle} is already blocked.")
    for f in (_follow(db, ME, user_id), _follow(db, user_id, ME)):
        if f is not None:
            db.delete(f)
    db.add(Block(blocker_id=ME, blocked_id=user_id, created_at=REFERENCE_TIME))
    db.commit()
    return FollowOut(user_id=user_id, handle=u.handle, status="blocked")


@app.delete("/users/{user_id}/block", operation_id="unblock_user", response_model=FollowOut)
def unblock_user(user_id: int, db: Session = Depends(get_db)) -> FollowOut:
    """Unblock a member you blocked (follows are not restored)."""
    u = _user(db, user_id)
    b = _i_blocked(db, user_id)
    if b is None:
        raise HTTPException(409, f"@{u.handle} is not blocked.")
    db.delete(b)
    db.commit()
    return FollowOut(user_id=user_id, handle=u.handle, status="unblocked")


@app.get("/me/blocked", operation_id="list_blocked_users", response_model=BlockList)
def list_blocked_users(db: Session = Depends(get_db)) -> BlockList:
    """Members you blocked."""
    rows = db.scalars(select(Block).where(Block.blocker_id == ME).order_by(Block.block_id))
    items = []
    for b in rows:
        u = db.get(User, b.blocked_id)
        items.append(
            BlockOut(
                user_id=u.user_id,
                handle=u.handle,
                display_name=u.display_name,
                blocked_at=b.created_at,
            )
        )
    return BlockList(items=items, total=len(items))


# --------------------------------------------------------------------------- tools: posts


@app.get("/feed", operation_id="get_feed", response_model=PostPage)
def get_feed(
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> PostPage:
    """Posts by you and the people you follow, newest first; paginated."""
    followed = list(
        db.scalars(
            select(Follow.followee_id).where(Follow.follower_id == ME, Follow.status == "active")
        )
    )
    posts = _visible_posts(db, select(Post).where(Post.author_id.in_([ME, *followed])))
    items, total, nxt = _page(posts, _parse_cursor(cursor), limit)
    return PostPage(items=[_post_out(db, p) for p in items], total=total, next_cursor=nxt)


@app.get("/users/{user_id}/posts", operation_id="get_user_posts", response_model=PostPage)
def get_user_posts(
    user_id: int,
    since: str | None = Query(
        default=None, description="Only posts on or after this date, YYYY-MM-DD"
    ),
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> PostPage:
    """A member's posts you are allowed to see (yours: user_id 1), newest first; paginated."""
    u = _user(db, user_id)
    if not _can_see_posts_of(db, u):
        why = (
            "you blocked them"
            if _i_blocked(db, user_id)
            else "their account is private and you do not follow them"
        )
        raise HTTPException(403, f"You cannot see @{u.handle}'s posts: {why}.")
    stmt = select(Post).where(Post.author_id == user_id)
    if since:
        stmt = stmt.where(Post.created_at >= since.strip()[:10])
    posts = _visible_posts(db, stmt)
    items, total, nxt = _page(posts, _parse_cursor(cursor), limit)
    return PostPage(items=[_post_out(db, p) for p in items], total=total, next_cursor=nxt)


@app.get("/posts/{post_id}", operation_id="get_post", response_model=PostDetailOut)
def get_post(post_id: int, db: Session = Depends(get_db)) -> PostDetailOut:
    """One post with its comments."""
    p = _post(db, post_id)
    comments = [
        CommentOut(
            comment_id=c.comment_id,
            post_id=c.post_id,
            author_id=c.author_id,
            author_handle=db.get(User, c.author_id).handle,
            body=c.body,
            created_at=c.created_at,
        )
        for c in _comments(db, p)
    ]
    return PostDetailOut(**_post_out(db, p).model_dump(), comments=comments)


@app.post("/posts", operation_id="create_post", response_model=PostOut)
def create_post(body: PostIn, db: Session = Depends(get_db)) -> PostOut:
    """Publish a post to your profile, or into a group you are a member of."""
    if body.group_id is not None:
        g = _group(db, body.group_id)
        if _member(db, g.group_id) is None:
            raise HTTPException(403, f"You are not a member of {g.name}; join_group first.")
    p = Post(
        author_id=ME,
        group_id=body.group_id,
        body=body.body.strip(),
        visibility=body.visibility,
        created_at=REFERENCE_TIME,
    )
    db.add(p)
    db.commit()
    return _post_out(db, p)


@app.patch("/posts/{post_id}", operation_id="edit_post", response_model=PostOut)
def edit_post(
    post_id: int,
    body: str | None = Query(default=None, min_length=1, max_length=2000),
    visibility: Visibility | None = None,
    db: Session = Depends(get_db),
) -> PostOut:
    """Edit the text and/or visibility of one of your posts."""
    p = _my_post(db, post_id)
    if body is None and visibility is None:
        raise HTTPException(400, "Pass body, visibility or both.")
    if body is not None:
        p.body = body.strip()
    if visibility is not None:
        p.visibility = visibility
    p.edited_at = REFERENCE_TIME
    db.commit()
    return _post_out(db, p)


@app.delete("/posts/{post_id}", operation_id="delete_post", response_model=PostOut)
def delete_post(post_id: int, db: Session = Depends(get_db)) -> PostOut:
    """Delete one of your posts with its comments and likes."""
    p = _my_post(db, post_id)
    out = _post_out(db, p)
    for c in db.scalars(select(Comment).where(Comment.post_id == post_id)):
        db.delete(c)
    for lk in db.scalars(select(Like).where(Like.post_id == post_id)):
        db.delete(lk)
    db.flush()
    db.delete(p)
    db.commit()
    return out


@app.post("/posts/{post_id}/like", operation_id="like_post", response_model=PostOut)
def like_post(post_id: int, db: Session = Depends(get_db)) -> PostOut:
    """Like a post you can see."""
    p = _post(db, post_id)
    if db.scalar(select(Like).where(Like.post_id == post_id, Like.user_id == ME)):
        raise HTTPException(409, f"You already like post {post_id}.")
    db.add(Like(post_id=post_id, user_id=ME, created_at=REFERENCE_TIME))
    db.commit()
    return _post_out(db, p)


@app.delete("/posts/{post_id}/like", operation_id="unlike_post", response_model=PostOut)
def unlike_post(post_id: int, db: Session = Depends(get_db)) -> PostOut:
    """Remove your like from a post."""
    p = _post(db, post_id)
    lk = db.scalar(select(Like).where(Like.post_id == post_id, Like.user_id == ME))
    if lk is None:
        raise HTTPException(409, f"You have not liked post {post_id}.")
    db.delete(lk)
    db.commit()
    return _post_out(db, p)


@app.post("/posts/{post_id}/comments", operation_id="comment_on_post", response_model=CommentOut)
def comment_on_post(post_id: int, body: CommentIn, db: Session = Depends(get_db)) -> CommentOut:
    """Comment on a post you can see."""
    p = _post(db, post_id)
    c = Comment(post_id=p.post_id, author_id=ME, body=body.body.strip(), created_at=REFERENCE_TIME)
    db.add(c)
    db.commit()
    return CommentOut(
        comment_id=c.comment_id,
        post_id=c.post_id,
        author_id=ME,
        author_handle=db.get(User, ME).handle,
        body=c.body,
        created_at=c.created_at,
    )


@app.delete("/comments/{comment_id}", operation_id="delete_comment", response_model=CommentOut)
def delete_comment(comment_id: int, db: Session = Depends(get_db)) -> CommentOut:
    """Delete a comment you wrote, or any comment on one of your own posts."""
    c = db.get(Comment, comment_id)
    p = db.get(Post, c.post_id) if c else None
    if c is None or not _can_view(db, p) or c not in _comments(db, p):
        raise HTTPException(
            404, f"Comment {comment_id} not found; get_post lists a post's comments."
        )
    if c.author_id != ME and p.author_id != ME:
        raise HTTPException(
            403,
            f"Comment {comment_id} is by someone else on someone else's post; you cannot delete it.",
        )
    out = CommentOut(
        comment_id=c.comment_id,
        post_id=c.post_id,
        author_id=c.author_id,
        author_handle=db.get(User, c.author_id).handle,
        body=c.body,
        created_at=c.created_at,
    )
    db.delete(c)
    db.commit()
    return out


# --------------------------------------------------------------------------- tools: groups


@app.get("/groups", operation_id="search_groups", response_model=GroupList)
def search_groups(
    query: str | None = Query(default=None, description="Part of the group name"),
    member_only: bool = Query(default=False, description="Only groups you belong to"),
    db: Session = Depends(get_db),
) -> GroupList:
    """Groups with their member counts and your role in each."""
    stmt = select(Group)
    if query:
        stmt = stmt.where(func.lower(Group.name).like(f"%{query.strip().lower()}%"))
    items = [_group_out(db, g) for g in db.scalars(stmt.order_by(Group.group_id))]
    if member_only:
        items = [g for g in items if g.my_role]
    return GroupList(items=items, total=len(items))


@app.get("/groups/{group_id}/posts", operation_id="get_group_posts", response_model=PostPage)
def get_group_posts(
    group_id: int,
    limit: int = Query(default=10, ge=1, le=MAX_PAGE),
    cursor: str | None = None,
    db: Session = Depends(get_db),
) -> PostPage:
    """Posts in a group (private groups: members only), newest first; paginated."""
    g = _group(db, group_id)
    if g.visibility == "private" and _member(db, group_id) is None:
        raise HTTPException(403, f"{g.name} is a private group; only members can read it.")
    posts = _visible_posts(db, select(Post).where(Post.group_id == group_id))
    items, total, nxt = _page(posts, _parse_cursor(cursor), limit)
    return PostPage(items=[_post_out(db, p) for p in items], total=total, next_cursor=nxt)


@app.post("/groups/{group_id}/join", operation_id="join_group", response_model=GroupOut)
def join_group(group_id: int, db: Session = Depends(get_db)) -> GroupOut:
    """Join a public group (private groups are invite-only)."""
    g = _group(db, group_id)
    if _member(db, group_id):
        raise HTTPException(409, f"You are already a member of {g.name}.")
    if g.visibility == "private":
        owner = db.get(User, g.owner_id).handle
        raise HTTPException(403, f"{g.name} is invite-only; ask its owner @{owner} for an invite.")
    db.add(GroupMember(group_id=group_id, user_id=ME, role="member", joined_at=REFERENCE_TIME))
    db.commit()
    return _group_out(db, g)


@app.post("/groups/{group_id}/leave", operation_id="leave_group", response_model=GroupOut)
def leave_group(group_id: int, db: Session = Depends(get_db)) -> GroupOut:
    """Leave a group you belong to (an owner cannot leave their own group)."""
    g = _group(db, group_id)
    m = _member(db, group_id)
    if m is None:
        raise HTTPException(409, f"You are not a member of {g.name}.")
    if m.role == "owner":
        raise HTTPException(409, f"You own {g.name}; owners cannot leave.")
    db.delete(m)
    db.commit()
    return _group_out(db, g)


# --------------------------------------------------------------------------- tools: messages


@app.post("/users/{user_id}/messages", operation_id="send_message", response_model=MessageOut)
def send_message(user_id: int, body: MessageIn, db: Session = Depends(get_db)) -> MessageOut:
    """Send a direct message. Private accounts only accept messages from people they follow."""
    u = _user(db, user_id)
    if user_id == ME:
        raise HTTPException(400, "You cannot message yourself.")
    if _i_blocked(db, user_id):
        raise HTTPException(409, f"You blocked @{u.handle}; unblock_user first.")
    if u.is_private and not _active_follow(db, user_id, ME):
        raise HTTPException(
            403,
            f"@{u.handle} is a private account that does not follow you; they cannot receive your messages.",
        )
    m = Message(sender_id=ME, recipient_id=user_id, body=body.body.strip(), sent_at=REFERENCE_TIME)
    db.add(m)
    db.commit()
    return _message_out(db, m)


@app.get("/users/{user_id}/messages", operation_id="get_conversation", response_model=Conversation)
def get_conversation(user_id: int, db: Session = Depends(get_db)) -> Conversation:
    """Your direct messages with one member, oldest first."""
    u = _user(db, user_id)
    rows = db.scalars(
        select(Message)
        .where(
            or_(
                (Message.sender_id == ME) & (Message.recipient_id == user_id),
                (Message.sender_id == user_id) & (Message.recipient_id == ME),
            )
        )
        .order_by(Message.sent_at, Message.message_id)
    )
    items = [_message_out(db, m) for m in rows]
    return Conversation(user_id=u.user_id, handle=u.handle, items=items, total=len(items))
