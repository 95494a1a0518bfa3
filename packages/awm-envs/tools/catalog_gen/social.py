"""Generate catalog/social/seed.sql (reference time 2025-05-09T12:00:00Z).

Member 1 (Theo Nakamura, a private account) has a hand-written social graph the
tasks rely on: three pending follow requests (one from a spam account that also
comments on his posts), people he follows who went quiet before 2025, followers
he never followed back, a private friend's posts from this week, two members
named Alex Kim, a user he blocked and a user who blocked him. 40 members post,
comment, like, message and meet in groups.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 5, 9, 12, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


# (handle, display name, private, bio)
USERS = [
    ("theo.nakamura", "Theo Nakamura", 1, "Portland. Running, bread, film cameras."),
    ("marta.l", "Marta Lopez", 0, "Trail runner."),
    ("spam.bot.99", "Free Followers Fast", 0, "10k followers in 24h!!! DM me"),
    ("jules.r", "Jules Renard", 0, "Baker at Pearl Loaves."),
    ("alexkim", "Alex Kim", 0, "Marathoner, coffee addict."),
    ("alex.kim.design", "Alex Kim", 0, "Graphic designer. Colour nerd."),
    ("hana.s", "Hana Sato", 1, "Ceramics and long walks."),
    ("sam.okafor", "Sam Okafor", 0, "Runs the Portland Runners group."),
    ("troll_patrol", "Troll Patrol", 0, "Just asking questions."),
    ("jonas.b", "Jonas Berg", 0, "Cyclist."),
    ("priya.k", "Priya Kapoor", 0, "Bookworm."),
    ("nina.v", "Nina Volkova", 0, "Photographer."),
    ("oliver.g", "Oliver Grant", 0, "Mostly offline these days."),
    ("ruby.m", "Ruby Moore", 0, "Sourdough or bust."),
    ("leo.park", "Leo Park", 1, "Private account."),
]
MORE = [
    "Ivy Chen",
    "Mateo Ruiz",
    "Grace Obi",
    "Ben Hart",
    "Lena Fox",
    "Omar Aziz",
    "Kai Larsen",
    "Zoe Blake",
    "Emil Novak",
    "Sara Quinn",
    "Finn Doyle",
    "Aria Shah",
    "Noel Park",
    "Iris Lund",
    "Hugo Weiss",
    "Maya Reyes",
    "Tom Wade",
    "Lucy Bell",
    "Raj Mehta",
    "Elsa Berg",
    "Dan Cole",
    "Amy Frost",
    "Joel Sims",
    "Nora Vance",
    "Paul Ortiz",
]
FOLLOWING = [5, 7, 8, 10, 11, 13, 14, 16, 17, 18, 19, 20, 21, 22]
QUIET = {13, 19, 22}  # followed by Theo, no posts in 2025
FOLLOWERS = [5, 7, 8, 10, 11, 14, 16, 17, 23, 24, 25]
PRIVATE_EXTRA = {25}

LINES = [
    "Morning miles along the waterfront.",
    "New loaf, better crumb this time.",
    "Anyone tried the new cafe on Alberta?",
    "Rainy Saturday, perfect for reading.",
    "Developed a roll of Portra 400 today.",
    "Bike commute was glorious.",
    "Finally fixed the squeaky door.",
    "Farmers market haul!",
    "Sunset from Mt Tabor.",
    "Weekend plans?",
    "Trying a new recipe tonight.",
    "Hill repeats destroyed me.",
    "Who's going to the concert Friday?",
    "Found a great used bookstore.",
    "Spring is here.",
    "Coffee first, then everything else.",
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20250509)
    w = SeedWriter(
        "Social network seed data. Reference time 2025-05-09T12:00:00Z; the logged-in member is 1."
    )
    users = []
    for i, (handle, name, private, bio) in enumerate(USERS, start=1):
        users.append((i, handle, name, bio, private, ts(REF - timedelta(days=1200 - i * 20))))
    for k, name in enumerate(MORE):
        i = len(users) + 1
        handle = name.lower().replace(" ", "_")
        users.append(
            (i, handle, name, "", int(i in PRIVATE_EXTRA), ts(REF - timedelta(days=900 - k * 15)))
        )
    n_users = len(users)
    w.add("users", ("user_id", "handle", "display_name", "bio", "is_private", "joined_at"), users)

    follows: list[tuple] = []
    seen: set[tuple[int, int]] = set()

    def follow(a: int, b: int, status: str, when: datetime) -> None:
        if (a, b) in seen or a == b:
            return
        seen.add((a, b))
        follows.append((len(follows) + 1, a, b, status, ts(when)))

    for k, u in enumerate(FOLLOWING):
        follow(1, u, "active", datetime(2024, 1, 10) + timedelta(days=k * 17))
    for k, u in enumerate(FOLLOWERS):
        follow(u, 1, "active", datetime(2024, 2, 3) + timedelta(days=k * 19))
    follow(2, 1, "pending", datetime(2025, 5, 6, 18))
    follow(3, 1, "pending", datetime(2025, 5, 7, 3))
    follow(4, 1, "pending", datetime(2025, 5, 8, 20))
    blocked = {(1, 9), (12, 1)}
    for a in range(2, n_users + 1):
        for b in rng.sample(range(2, n_users + 1), 6):
            if (a, b) in blocked or (b, a) in blocked or b == 1:
                continue
            private = users[b - 1][4]
            follow(
                a,
                b,
                "pending" if private and rng.random() < 0.3 else "active",
                REF - timedelta(days=rng.randint(5, 400)),
            )
    w.add("follows", ("follow_id", "follower_id", "followee_id", "status", "created_at"), follows)
    w.add(
        "blocks",
        ("block_id", "blocker_id", "blocked_id", "created_at"),
        [(1, 1, 9, "2025-02-14T22:00:00Z"), (2, 12, 1, "2025-03-30T10:00:00Z")],
    )

    groups = [
        (
            1,
            "Portland Runners",
            "Group runs, race chat and routes around Portland.",
            "public",
            8,
            "2023-04-01T10:00:00Z",
        ),
        (
            2,
            "Film Photography Club",
            "Share scans, swap tips, find labs.",
            "public",
            6,
            "2023-09-12T10:00:00Z",
        ),
        (3, "Book Swap PDX", "Invite-only book exchange.", "private", 11, "2024-01-05T10:00:00Z"),
        (
            4,
            "Sourdough Bakers",
            "Starters, crumb shots and troubleshooting.",
            "public",
            14,
            "2024-03-18T10:00:00Z",
        ),
        (
            5,
            "Cycling Commuters",
            "Routes, gear and safety for bike commuters.",
            "public",
            10,
            "2024-06-01T10:00:00Z",
        ),
    ]
    w.add(
        "groups",
        ("group_id", "name", "description", "visibility", "owner_id", "created_at"),
        groups,
    )
    members: list[tuple] = []
    roster = {
        1: [8, 1, 5, 10, 14, 16, 17, 20, 23, 30],
        2: [6, 1, 12, 18, 21, 27, 33],
        3: [11, 7, 19, 24, 28],
        4: [14, 4, 2, 26, 29, 31, 35],
        5: [10, 16, 22, 32, 34, 36],
    }
    for gid, uids in roster.items():
        for k, u in enumerate(uids):
            members.append(
                (
                    len(members) + 1,
                    gid,
                    u,
                    "owner" if k == 0 else "member",
                    ts(datetime(2024, 4, 1) + timedelta(days=gid * 9 + k * 11)),
                )
            )
    w.add("group_members", ("membership_id", "group_id", "user_id", "role", "joined_at"), members)

    posts: list[tuple] = []

    def post(
        author: int, body: str, when: datetime, visibility: str = "public", group: int | None = None
    ) -> int:
        posts.append((len(posts) + 1, author, group, body, visibility, ts(when), None))
        return len(posts)

    theo = [
        post(1, "Ran my first sub-50 10k!", datetime(2025, 3, 2, 9)),
        post(1, "Starter is finally bubbly after a week.", datetime(2025, 3, 16, 18), "followers"),
        post(1, "Farmers market haul: ramps, rhubarb and too many eggs.", datetime(2025, 4, 5, 13)),
        post(1, "Someone stole my bike lock. Who steals just the lock?", datetime(2025, 4, 12, 8)),
        post(1, "Shot a roll of Ektar at the coast.", datetime(2025, 4, 20, 17)),
        post(1, "Rest day. Legs say thank you.", datetime(2025, 4, 27, 11), "followers"),
        post(1, "Hill repeats on Mt Tabor tonight, 6pm, come along.", datetime(2025, 5, 3, 7)),
        post(1, "New personal best at the Saturday parkrun: 21:48.", datetime(2025, 5, 8, 10)),
    ]
    hana_week = [
        post(7, "Glazing day at the studio.", datetime(2025, 5, 5, 16), "followers"),
        post(7, "Kiln opened: two cracked, five perfect.", datetime(2025, 5, 7, 19), "followers"),
        post(7, "Walked to Council Crest, worth the climb.", datetime(2025, 5, 9, 8)),
    ]
    post(7, "Spring tea bowls are done.", datetime(2025, 4, 28, 12), "followers")
    designer = [
        post(6, "New poster series: Pacific Northwest in four colours.", datetime(2025, 4, 22, 10)),
        post(6, "Colour study: moss, slate, rust.", datetime(2025, 5, 1, 14)),
        post(6, "Client work is done, time for personal projects.", datetime(2025, 5, 6, 9)),
    ]
    post(6, "Risograph test prints.", datetime(2025, 3, 30, 11))
    post(5, "Marathon training week 12 done.", datetime(2025, 5, 4, 12))
    sam_group = post(
        8, "Sunday long run: 15 miles from Sellwood, 7am.", datetime(2025, 5, 7, 20), group=1
    )
    post(8, "Group run recap: 23 people showed up!", datetime(2025, 4, 27, 14), group=1)
    post(12, "Portfolio update.", datetime(2025, 5, 2, 10))
    post(9, "Hot take: running is overrated.", datetime(2025, 5, 6, 23))
    post(15, "Private thoughts.", datetime(2025, 5, 1, 9), "followers")
    post(11, "Swap list for May is up.", datetime(2025, 5, 3, 10), group=3)
    for u in range(2, n_users + 1):
        if u in (3, 6, 7, 9, 12, 15):
            continue
        for _ in range(rng.randint(2, 5)):
            if u in QUIET:
                when = datetime(2024, 6, 1) + timedelta(
                    days=rng.randint(0, 200), hours=rng.randint(7, 21)
                )
            else:
                when = REF - timedelta(days=rng.randint(1, 120), hours=rng.randint(1, 12))
            gid = (
                next((g for g, r in roster.items() if u in r and g != 3), None)
                if rng.random() < 0.2
                else None
            )
            post(u, rng.choice(LINES), when, rng.choice(("public", "public", "followers")), gid)
    w.add(
        "posts",
        ("post_id", "author_id", "group_id", "body", "visibility", "created_at", "edited_at"),
        posts,
    )

    comments: list[tuple] = []

    def comment(post_id: int, author: int, body: str, when: datetime) -> None:
        comments.append((len(comments) + 1, post_id, author, body, ts(when)))

    comment(theo[7], 3, "Want 10k followers FAST? DM me!!!", datetime(2025, 5, 8, 11))
    comment(theo[7], 5, "Huge! Congrats Theo.", datetime(2025, 5, 8, 12))
    comment(theo[6], 3, "Boost your account today, link in bio", datetime(2025, 5, 3, 9))
    comment(theo[6], 8, "I'll be there.", datetime(2025, 5, 3, 10))
    comment(theo[3], 10, "Classic Portland.", datetime(2025, 4, 12, 9))
    comment(theo[0], 7, "So proud of you!", datetime(2025, 3, 2, 12))
    comment(sam_group, 16, "In!", datetime(2025, 5, 7, 21))
    for _ in range(110):
        p = rng.choice(posts)
        if p[1] in (3, 9, 12, 15) or p[0] in theo[6:]:
            continue
        author = rng.randint(2, n_users)
        if author in (3, 9, 12) or author == p[1]:
            continue
        when = min(
            REF - timedelta(minutes=30),
            datetime.strptime(p[5], "%Y-%m-%dT%H:%M:%SZ") + timedelta(hours=rng.randint(1, 48)),
        )
        comment(
            p[0],
            author,
            rng.choice(
                ("Love this!", "Nice one.", "Haha", "Agreed.", "Where is this?", "Great shot")
            ),
            when,
        )
    w.add("comments", ("comment_id", "post_id", "author_id", "body", "created_at"), comments)

    likes: list[tuple] = []
    liked: set[tuple[int, int]] = set()

    def like(post_id: int, user: int, when: datetime) -> None:
        if (post_id, user) in liked:
            return
        liked.add((post_id, user))
        likes.append((len(likes) + 1, post_id, user, ts(when)))

    for k, u in enumerate((5, 7, 8, 10, 14, 16, 23)):
        like(theo[7], u, datetime(2025, 5, 8, 11) + timedelta(minutes=7 * k))
    like(hana_week[1], 1, datetime(2025, 5, 7, 21))
    like(designer[0], 1, datetime(2025, 4, 22, 12))
    for _ in range(260):
        p = rng.choice(posts)
        if p[0] == theo[7] or p[0] in hana_week or p[0] in designer:
            continue
        user = rng.randint(2, n_users)
        if user in (3, 9, 12) or user == p[1]:
            continue
        like(
            p[0],
            user,
            min(
                REF - timedelta(minutes=10),
                datetime.strptime(p[5], "%Y-%m-%dT%H:%M:%SZ") + timedelta(hours=rng.randint(1, 72)),
            ),
        )
    w.add("likes", ("like_id", "post_id", "user_id", "created_at"), likes)

    messages: list[tuple] = [
        (1, 3, 1, "Hey! Want more followers? Cheap packages!", "2025-05-07T03:05:00Z"),
        (2, 3, 1, "Last chance for 50% off followers", "2025-05-08T03:05:00Z"),
        (3, 5, 1, "Parkrun Saturday?", "2025-05-06T19:00:00Z"),
        (4, 1, 5, "Yes! See you at 9.", "2025-05-06T19:20:00Z"),
        (5, 7, 1, "Come by the studio sale on Sunday.", "2025-05-08T15:00:00Z"),
    ]
    for _ in range(40):
        a, b = rng.sample(range(2, n_users + 1), 2)
        if {a, b} & {3, 9} or (a, b) in blocked or (b, a) in blocked:
            continue
        messages.append(
            (
                len(messages) + 1,
                a,
                b,
                rng.choice(("hey!", "see you soon", "thanks!", "did you see that?", "lol")),
                ts(REF - timedelta(days=rng.randint(1, 60), hours=rng.randint(0, 23))),
            )
        )
    w.add("messages", ("message_id", "sender_id", "recipient_id", "body", "sent_at"), messages)
    return w


def main() -> None:
    w = build()
    path = w.write("social")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
