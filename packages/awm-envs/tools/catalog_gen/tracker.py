"""Generate catalog/tracker/seed.sql (reference time 2025-11-05T10:00:00Z, a Wednesday).

User 1 (Ava Thompson) is a maintainer of Storefront Web, a developer on the
Mobile App and the archived Legacy CMS, a viewer of the Finance Portal and no
member of Infrastructure. The issues the tasks rely on are written by hand
(the active sprint, a blocked release, untriaged bugs, her time logs); the
rest of each project is seeded filler.
"""

from __future__ import annotations

import random
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlgen import SeedWriter  # noqa: E402

REF = datetime(2025, 11, 5, 10, 0, 0)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


USERS = [
    (1, "Ava Thompson", "ava", "Frontend Engineer", 1),
    (2, "Marcus Webb", "marcus", "Engineering Manager", 1),
    (3, "Chris Lee", "chris.lee", "iOS Engineer", 1),
    (4, "Chris Lee", "chrislee2", "Android Engineer", 1),
    (5, "Priya Nair", "priya", "Backend Engineer", 1),
    (6, "Tom Becker", "tom", "QA Engineer", 1),
    (7, "Lina Ortiz", "lina", "Product Manager", 1),
    (8, "Sam Okoye", "sam", "DevOps Engineer", 1),
    (9, "Julia Novak", "julia", "Finance Analyst", 1),
    (10, "Kenji Mori", "kenji", "Backend Engineer", 1),
    (11, "Rosa Quinn", "rosa", "Product Designer", 1),
    (12, "Ben Adler", "ben", "Data Engineer", 0),
    (13, "Hana Sato", "hana", "Frontend Engineer", 1),
    (14, "Omar Farouk", "omar", "Site Reliability Engineer", 1),
]

# (project_id, key, name, description, owner, archived, created)
PROJECTS = [
    (1, "WEB", "Storefront Web", "The customer-facing web shop.", 2, 0, "2024-02-01T09:00:00Z"),
    (2, "MOB", "Mobile App", "iOS and Android shopping apps.", 7, 0, "2024-05-10T09:00:00Z"),
    (3, "OPS", "Infrastructure", "Clusters, CI and on-call.", 8, 0, "2023-11-20T09:00:00Z"),
    (4, "FIN", "Finance Portal", "Internal invoicing and reports.", 9, 0, "2024-08-01T09:00:00Z"),
    (5, "OLD", "Legacy CMS", "The retired content system.", 2, 1, "2021-03-15T09:00:00Z"),
]

MEMBERS = {
    1: [
        (2, "owner"),
        (1, "maintainer"),
        (5, "developer"),
        (6, "developer"),
        (7, "developer"),
        (10, "developer"),
        (13, "developer"),
        (12, "developer"),
        (11, "viewer"),
    ],
    2: [
        (7, "owner"),
        (1, "developer"),
        (3, "developer"),
        (4, "developer"),
        (6, "developer"),
        (11, "developer"),
    ],
    3: [(8, "owner"), (14, "maintainer"), (5, "developer")],
    4: [(9, "owner"), (2, "maintainer"), (10, "developer"), (1, "viewer")],
    5: [(2, "owner"), (1, "developer"), (5, "developer")],
}

# (sprint_id, project_id, name, starts_on, ends_on, status)
SPRINTS = [
    (1, 1, "WEB Sprint 21", "2025-10-13", "2025-10-24", "closed"),
    (2, 1, "WEB Sprint 22", "2025-10-27", "2025-11-07", "active"),
    (3, 1, "WEB Sprint 23", "2025-11-10", "2025-11-21", "planned"),
    (4, 2, "MOB Sprint 8", "2025-10-29", "2025-11-11", "active"),
    (5, 2, "MOB Sprint 9", "2025-11-12", "2025-11-25", "planned"),
    (6, 3, "OPS Cycle 2025-Q4-2", "2025-10-27", "2025-11-21", "active"),
    (7, 4, "FIN Sprint 3", "2025-10-20", "2025-11-14", "active"),
]

LABELS = [
    (1, 1, "frontend", "#1f77b4"),
    (2, 1, "backend", "#ff7f0e"),
    (3, 1, "checkout", "#2ca02c"),
    (4, 1, "performance", "#d62728"),
    (5, 1, "accessibility", "#9467bd"),
    (6, 1, "tech-debt", "#8c564b"),
    (7, 1, "blocked", "#e377c2"),
    (8, 2, "ios", "#7f7f7f"),
    (9, 2, "android", "#bcbd22"),
    (10, 2, "crash", "#17becf"),
    (11, 2, "ux", "#aec7e8"),
    (12, 2, "tech-debt", "#8c564b"),
    (13, 3, "infra", "#ffbb78"),
    (14, 3, "oncall", "#98df8a"),
    (15, 4, "reports", "#ff9896"),
    (16, 4, "compliance", "#c5b0d5"),
    (17, 5, "legacy", "#c49c94"),
]

# Hand-written issues: project -> number -> fields
# (title, type, status, priority, reporter, assignee, sprint, points, due, labels)
KEY_ISSUES: dict[int, dict[int, tuple]] = {
    1: {
        # WEB Sprint 22 (active): 14 issues, two unfinished tech-debt ones
        30: (
            "Remove jQuery from the account pages",
            "task",
            "todo",
            "low",
            2,
            13,
            2,
            3,
            None,
            [6, 1],
        ),
        31: ("Delete unused feature flags", "task", "done", "low", 2, 1, 2, 1, None, [6]),
        33: (
            "Migrate price formatting to Intl.NumberFormat",
            "task",
            "in_progress",
            "medium",
            1,
            1,
            2,
            2,
            None,
            [6, 1],
        ),
        35: (
            "Product page lazy-loads hero image too late",
            "bug",
            "done",
            "medium",
            6,
            13,
            2,
            2,
            None,
            [4, 1],
        ),
        37: (
            "Add coupon field validation messages",
            "story",
            "in_review",
            "medium",
            7,
            13,
            2,
            3,
            None,
            [3, 1],
        ),
        39: (
            "Guest checkout loses address on back navigation",
            "bug",
            "in_progress",
            "high",
            6,
            5,
            2,
            5,
            "2025-11-07",
            [3],
        ),
        40: (
            "Keyboard focus trapped in size picker",
            "bug",
            "todo",
            "medium",
            11,
            1,
            2,
            2,
            None,
            [5],
        ),
        42: (
            "Add skeleton loaders to product grid",
            "story",
            "todo",
            "medium",
            7,
            None,
            2,
            3,
            None,
            [1],
        ),
        44: ("Paginate order history API", "task", "done", "medium", 5, 5, 2, 5, None, [2]),
        46: ("Compress category banner images", "task", "done", "low", 13, 13, 2, 1, None, [4]),
        51: (
            "Cache shipping estimates per postcode",
            "story",
            "in_progress",
            "medium",
            5,
            10,
            2,
            8,
            None,
            [2, 4],
        ),
        57: (
            "Cart total shows stale value after coupon removal",
            "bug",
            "in_progress",
            "high",
            6,
            1,
            2,
            3,
            "2025-11-06",
            [3, 1],
        ),
        58: (
            "Invalidate cart cache on coupon change",
            "bug",
            "in_review",
            "high",
            5,
            5,
            2,
            2,
            "2025-11-06",
            [3, 2],
        ),
        61: (
            "Release coupon fixes to production",
            "task",
            "todo",
            "high",
            2,
            1,
            2,
            1,
            "2025-11-07",
            [3, 7],
        ),
        # backlog triage candidates
        63: (
            "Checkout button unresponsive on Safari 17",
            "bug",
            "todo",
            "urgent",
            6,
            None,
            None,
            None,
            None,
            [3],
        ),
        64: (
            "Search returns 500 for queries with emoji",
            "bug",
            "todo",
            "high",
            10,
            None,
            None,
            None,
            None,
            [2],
        ),
        65: (
            "Wishlist heart icon misaligned on tablets",
            "bug",
            "todo",
            "high",
            11,
            13,
            None,
            None,
            None,
            [1],
        ),
        66: (
            "Order confirmation email shows wrong currency",
            "bug",
            "todo",
            "high",
            7,
            None,
            None,
            None,
            None,
            [2],
        ),
        67: (
            "Newsletter popup reappears after closing",
            "bug",
            "wont_do",
            "high",
            7,
            None,
            None,
            None,
            None,
            [1],
        ),
        68: (
            "Footer links underline on hover only",
            "bug",
            "todo",
            "medium",
            11,
            None,
            None,
            None,
            None,
            [1, 5],
        ),
        69: (
            "Upgrade payment SDK to v5",
            "task",
            "todo",
            "high",
            5,
            None,
            None,
            None,
            None,
            [3, 2],
        ),
        70: (
            "Promo banner overlaps cart drawer on iPad",
            "bug",
            "todo",
            "high",
            6,
            None,
            3,
            None,
            None,
            [1],
        ),
    },
    2: {
        12: (
            "Android app crashes on cold start with no network",
            "bug",
            "in_progress",
            "urgent",
            6,
            4,
            4,
            5,
            "2025-11-07",
            [9, 10],
        ),
        14: (
            "Dark mode colours on order history",
            "story",
            "todo",
            "low",
            11,
            1,
            4,
            3,
            "2025-11-20",
            [11],
        ),
        15: (
            "Push notification opt-in copy",
            "task",
            "in_review",
            "medium",
            7,
            1,
            4,
            1,
            "2025-11-10",
            [11],
        ),
    },
    4: {
        7: (
            "Quarterly revenue report totals off by one day",
            "bug",
            "in_progress",
            "high",
            9,
            10,
            7,
            3,
            "2025-11-12",
            [15],
        ),
    },
    5: {
        4: (
            "Image upload fails for files over 8 MB",
            "bug",
            "todo",
            "medium",
            5,
            1,
            None,
            2,
            None,
            [17],
        ),
    },
}

FILLER_TITLES = [
    "Update {x} copy",
    "Refactor {x} module",
    "Flaky test in {x}",
    "Improve {x} loading time",
    "Add analytics events to {x}",
    "{x} breaks on small screens",
    "Write docs for {x}",
    "Remove deprecated {x} endpoint",
    "Audit {x} permissions",
    "Spike: rethink {x}",
]
THINGS = {
    1: ["search", "reviews", "account", "footer", "sitemap", "filters", "header", "gift cards"],
    2: ["onboarding", "profile", "settings", "deep links", "cart", "login"],
    3: ["CI runners", "staging cluster", "log shipping", "backups", "DNS", "alerting"],
    4: ["invoice export", "VAT report", "ledger sync", "payouts", "audit trail"],
    5: ["page editor", "media library", "RSS feed", "templates"],
}
SIZES = {1: 70, 2: 24, 3: 18, 4: 14, 5: 10}

# Ava's time logs: (issue key, logged_on, minutes, note)
AVA_LOGS = [
    ((1, 33), "2025-10-24", 120, "Price formatting spike"),
    ((1, 33), "2025-10-27", 180, "Intl.NumberFormat migration"),
    ((1, 57), "2025-10-28", 240, "Reproducing stale cart total"),
    ((1, 40), "2025-10-29", 90, "Focus trap investigation"),
    ((2, 15), "2025-10-30", 60, "Push opt-in copy changes"),
    ((1, 57), "2025-10-31", 300, "Cart total fix"),
    ((1, 31), "2025-10-31", 45, "Flag cleanup"),
    ((2, 14), "2025-11-02", 75, "Dark mode palette"),
    ((1, 57), "2025-11-03", 150, "Coupon edge cases"),
    ((1, 61), "2025-11-04", 30, "Release checklist"),
]


def build() -> SeedWriter:
    """All seed rows, deterministically."""
    rng = random.Random(20251105)
    w = SeedWriter(
        "Project tracker seed data. Reference time 2025-11-05T10:00:00Z; the logged-in user is 1."
    )
    w.add(
        "users",
        ("user_id", "name", "handle", "title", "is_active", "email"),
        [(*u, f"{u[2]}@northwind.dev") for u in USERS],
    )
    w.add(
        "projects",
        ("project_id", "key", "name", "description", "owner_id", "is_archived", "created_at"),
        PROJECTS,
    )
    w.add(
        "project_members",
        ("project_id", "user_id", "role", "joined_at"),
        [
            (pid, uid, role, ts(REF - timedelta(days=300 - 7 * i)))
            for pid, members in MEMBERS.items()
            for i, (uid, role) in enumerate(members)
        ],
    )
    w.add(
        "sprints",
        ("sprint_id", "project_id", "name", "starts_on", "ends_on", "status"),
        SPRINTS,
    )
    w.add("labels", ("label_id", "project_id", "name", "color"), LABELS)

    issues: list[tuple] = []
    issue_labels: list[tuple] = []
    ids: dict[tuple[int, int], int] = {}
    for pid, key, *_ in PROJECTS:
        workers = [u for u, role in MEMBERS[pid] if role != "viewer" and u != 12]
        project_labels = [lab[0] for lab in LABELS if lab[1] == pid]
        sprint_ids = [s[0] for s in SPRINTS if s[1] == pid]
        for number in range(1, SIZES[pid] + 1):
            created = REF - timedelta(days=(SIZES[pid] - number) * 3 + 2, hours=rng.randint(0, 9))
            if number in KEY_ISSUES.get(pid, {}):
                title, kind, status, prio, reporter, assignee, sprint, points, due, labs = (
                    KEY_ISSUES[pid][number]
                )
            else:
                title = rng.choice(FILLER_TITLES).format(x=rng.choice(THINGS[pid]))
                kind = rng.choice(["bug", "task", "task", "story"])
                prio = rng.choice(["low", "medium", "medium", "high"])
                reporter = rng.choice(workers)
                assignee = rng.choice([u for u in workers if u != 1])
                points = rng.choice([1, 2, 3, 5, 8])
                due = None
                labs = rng.sample(project_labels, k=min(len(project_labels), rng.randint(0, 2)))
                if pid == 1:
                    # WEB filler never lands in the active sprint or untriaged in the backlog
                    labs = [lab for lab in labs if lab not in (6, 7)]
                    sprint = 1 if number < 30 else rng.choice([3, None])
                    status = "done" if sprint == 1 else rng.choice(["todo", "todo", "in_progress"])
                elif pid == 5:
                    sprint = None
                    status = rng.choice(["done", "wont_do", "todo"])
                else:
                    sprint = rng.choice([*sprint_ids, None])
                    status = rng.choice(["todo", "in_progress", "in_review", "done"])
            updated = created + timedelta(days=rng.randint(0, 2), hours=rng.randint(0, 5))
            closed = ts(updated) if status in ("done", "wont_do") else None
            issue_id = len(issues) + 1
            ids[(pid, number)] = issue_id
            issues.append(
                (
                    issue_id,
                    pid,
                    number,
                    title,
                    f"{title}. Reported in {key}; see comments for details.",
                    kind,
                    status,
                    prio,
                    reporter,
                    assignee,
                    sprint,
                    points,
                    due,
                    ts(created),
                    ts(updated),
                    closed,
                )
            )
            for lab in sorted(set(labs)):
                issue_labels.append((issue_id, lab))
    w.add(
        "issues",
        (
            "issue_id",
            "project_id",
            "number",
            "title",
            "description",
            "type",
            "status",
            "priority",
            "reporter_id",
            "assignee_id",
            "sprint_id",
            "estimate_points",
            "due_date",
            "created_at",
            "updated_at",
            "closed_at",
        ),
        issues,
    )
    w.add("issue_labels", ("issue_id", "label_id"), issue_labels)
    w.add(
        "issue_links",
        ("link_id", "blocker_issue_id", "blocked_issue_id", "created_at"),
        [
            (1, ids[(1, 58)], ids[(1, 61)], "2025-10-30T11:00:00Z"),
            (2, ids[(1, 44)], ids[(1, 51)], "2025-10-27T09:30:00Z"),
            (3, ids[(2, 12)], ids[(2, 15)], "2025-10-31T16:00:00Z"),
        ],
    )

    comments = [
        (
            ids[(1, 57)],
            6,
            "Repro: apply SAVE10, remove it, total stays discounted.",
            "2025-10-28T09:10:00Z",
        ),
        (ids[(1, 57)], 1, "Looking into it, probably the cart cache.", "2025-10-28T10:02:00Z"),
        (ids[(1, 61)], 2, "Blocked until the cache invalidation lands.", "2025-10-30T11:05:00Z"),
        (ids[(1, 42)], 7, "Design is in the product grid spec, page 4.", "2025-10-27T15:00:00Z"),
        (ids[(4, 7)], 9, "Numbers for October 31 end up in November.", "2025-10-22T08:30:00Z"),
    ]
    for issue in issues:
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            pid = issue[1]
            author = rng.choice([u for u, _ in MEMBERS[pid] if u != 1])
            when = datetime.fromisoformat(issue[13].replace("Z", "")) + timedelta(
                hours=rng.randint(1, 60)
            )
            if when < REF:
                comments.append(
                    (
                        issue[0],
                        author,
                        rng.choice(
                            [
                                "Can you add steps to reproduce?",
                                "I can pick this up next sprint.",
                                "Linked the PR.",
                                "Confirmed on staging.",
                                "Is this still relevant?",
                                "Needs design input.",
                            ]
                        ),
                        ts(when),
                    )
                )
    comments.sort(key=lambda c: c[3])
    w.add(
        "comments",
        ("comment_id", "issue_id", "author_id", "body", "created_at"),
        [(i, *c) for i, c in enumerate(comments, start=1)],
    )

    logs = [(ids[k], 1, minutes, day, note) for k, day, minutes, note in AVA_LOGS]
    for issue in issues:
        if issue[6] in ("in_progress", "in_review", "done") and issue[9] not in (None, 1, 12):
            for _ in range(rng.randint(1, 3)):
                day = date(2025, 11, 5) - timedelta(days=rng.randint(1, 40))
                logs.append(
                    (
                        issue[0],
                        issue[9],
                        rng.choice([30, 45, 60, 90, 120, 180, 240]),
                        day.isoformat(),
                        "Work",
                    )
                )
    logs.sort(key=lambda r: (r[3], r[0], r[1]))
    w.add(
        "time_logs",
        ("time_log_id", "issue_id", "user_id", "minutes", "logged_on", "note"),
        [(i, *r) for i, r in enumerate(logs, start=1)],
    )
    return w


def main() -> None:
    w = build()
    path = w.write("tracker")
    print(f"wrote {path}: {w.row_count()} rows")


if __name__ == "__main__":
    main()
