"""The AWM paper's published numbers: the one place awm keeps them.

Wang, Xu, Liu, Wang, Han, Yao, Yao and He, *Agent World Model: Infinity Synthetic
Environments for Agentic Reinforcement Learning*, arXiv:2602.10090 (v3), 2026.

- **Table 4** (p. 7): BFCLv3 (overall and its categories), τ²-bench by domain
  (airline, retail, telecom) and MCP-Universe by domain, one row per training method
  (Base, Simulator, EnvScaler, AWM) for each of Qwen3-4B, Qwen3-8B and Qwen3-14B.
- **Table 5** (p. 7): Base and AWM by complexity bucket, for BFCLv3 (the number of
  tool calls a case requires) and τ²-bench (the number of ground-truth actions).

Only numbers read from a copy of the paper are kept, each with its source. What could
be read (see :data:`REFERENCES`): the Qwen3-8B BFCLv3 overall score before (53.83) and
after (65.94) AWM training, quoted from §5.2 (p. 6) and Table 4 (p. 7). No copy of
the two tables themselves could be read, so every other cell is absent (:data:`ABSENT`
says why, per table and benchmark) rather than estimated: a report shows an absent
reference as absent, never as a number. The layout (rows, columns, buckets) is kept
so that numbers read later drop into place; a test checks every reference is keyed by
a column the layout knows.

Values are kept as the paper prints them (percent); :meth:`Reference.fractions` gives
them in [0, 1], the unit of awm's summaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CITATION = (
    "Wang et al., Agent World Model: Infinity Synthetic Environments for Agentic "
    "Reinforcement Learning, arXiv:2602.10090 (2026)"
)
ARXIV = "2602.10090"

MODELS = ("Qwen3-4B", "Qwen3-8B", "Qwen3-14B")
"""The paper's base models (Qwen3 thinking models), in its order."""

METHODS = ("Base", "Simulator", "EnvScaler", "AWM")
"""Table 4's rows per model: untrained, trained in LLM-simulated environments (task- and
tool-matched), trained in EnvScaler's 191 environments, trained in AWM's."""


@dataclass(frozen=True)
class Column:
    """One column of a table: awm's metric key and the header it is shown under."""

    key: str
    label: str


TABLE4_COLUMNS: dict[str, tuple[Column, ...]] = {
    # bfcl-eval's leaderboard groups; relevance and irrelevance are its "hallucination
    # measurement" columns (eval_runner_helper: live_relevance, and the unweighted mean
    # of irrelevance and live_irrelevance)
    "bfcl": (
        Column("overall", "Overall"),
        Column("non_live", "Non-Live"),
        Column("live", "Live"),
        Column("multi_turn", "Multi-Turn"),
        Column("relevance", "Relevance"),
        Column("irrelevance", "Irrelevance"),
    ),
    # pass^1 per domain and its mean over the domains
    "tau2": (
        Column("airline", "Airline"),
        Column("retail", "Retail"),
        Column("telecom", "Telecom"),
        Column("average", "Avg"),
    ),
    # success rate per domain the paper evaluates (it leaves out 3D design and
    # repository management), named as MCP-Universe's task folders name them, and overall
    "mcpuniverse": (
        Column("location_navigation", "Location"),
        Column("browser_automation", "Browser"),
        Column("financial_analysis", "Financial"),
        Column("web_search", "Web Search"),
        Column("overall", "Overall"),
    ),
}
"""Table 4's columns per benchmark, in the benchmarks' order (BFCLv3, τ²-bench,
MCP-Universe); a run's own extra columns (e.g. the offline MCP-Universe domains) are
shown after these."""

TABLE5_BUCKETS: tuple[Column, ...] = (
    Column("none", "0"),
    Column("easy", "1-2"),
    Column("medium", "3-5"),
    Column("hard", "6-10"),
    Column("very_hard", "11+"),
)
"""Complexity buckets by a case's ground-truth call count: awm's own task buckets
(:func:`awm_core.models.task.complexity_for_calls`) plus one for cases that need no
call (BFCL irrelevance). The paper's Table 5 bucket edges could not be read."""

TABLE5_AXES: dict[str, str] = {
    "bfcl": "required tool calls",
    "tau2": "ground-truth actions",
}
"""What Table 5 buckets each benchmark by (MCP-Universe has no reference trajectories,
so the paper leaves it out of Table 5, and so does awm)."""


def bucket_of(calls: int) -> str:
    """The Table 5 bucket of a case that needs ``calls`` ground-truth calls."""
    if calls <= 0:
        return "none"
    if calls <= 2:
        return "easy"
    if calls <= 5:
        return "medium"
    if calls <= 10:
        return "hard"
    return "very_hard"


@dataclass(frozen=True)
class Reference:
    """One reference row of the paper: ``values`` maps column keys to the printed
    numbers (percent); empty when none of the row could be read."""

    table: str
    benchmark: str
    model: str
    method: str
    values: Mapping[str, float] = field(default_factory=dict)
    source: str = ""

    @property
    def label(self) -> str:
        suffix = "" if self.method == "Base" else f" + {self.method}"
        return f"{self.model}{suffix} (paper)"

    def fractions(self) -> dict[str, float]:
        """The values in [0, 1] (the paper prints percent)."""
        return {k: v / 100 for k, v in self.values.items()}


_BFCL_OVERALL_SOURCE = (
    "Table 4 (p. 7) and §5.2 (p. 6) of arXiv:2602.10090v3, as quoted by a "
    "source-linked summary of the paper: AWM's Qwen3-8B BFCLv3 overall is 65.94, up "
    "from 53.83"
)

REFERENCES: tuple[Reference, ...] = (
    Reference("4", "bfcl", "Qwen3-8B", "Base", {"overall": 53.83}, _BFCL_OVERALL_SOURCE),
    Reference("4", "bfcl", "Qwen3-8B", "AWM", {"overall": 65.94}, _BFCL_OVERALL_SOURCE),
)
"""Every number of the paper awm has read, with where it was read."""

_NOT_READ = (
    "no copy of the paper's Table {table} could be read (arXiv:2602.10090; the "
    "searched copies gave its abstract and summaries, not the table)"
)

ABSENT: dict[tuple[str, str], str] = {
    ("4", "bfcl"): "only the Qwen3-8B overall scores (Base 53.83, AWM 65.94) were read; "
    "the categories, Qwen3-4B/14B and the Simulator and EnvScaler rows are absent: "
    + _NOT_READ.format(table=4),
    ("4", "tau2"): "absent: " + _NOT_READ.format(table=4),
    ("4", "mcpuniverse"): "absent: " + _NOT_READ.format(table=4),
    ("5", "bfcl"): "absent: " + _NOT_READ.format(table=5),
    ("5", "tau2"): "absent: " + _NOT_READ.format(table=5),
}
"""Why a table's reference rows for a benchmark are missing or partial."""


TABLE_METHODS: dict[str, tuple[str, ...]] = {"4": METHODS, "5": ("Base", "AWM")}
"""The methods each table compares (Table 5: Base against AWM)."""


def reference_rows(table: str, benchmark: str) -> list[Reference]:
    """The paper's rows of ``table`` for ``benchmark`` in its order (model, then method),
    each with the values read (none for a row that could not be read)."""
    known = {
        (r.model, r.method): r for r in REFERENCES if (r.table, r.benchmark) == (table, benchmark)
    }
    return [
        known.get((model, method), Reference(table, benchmark, model, method))
        for model in MODELS
        for method in TABLE_METHODS[table]
    ]


def absent(table: str, benchmark: str) -> str | None:
    """Why ``table``'s reference rows for ``benchmark`` are missing or partial (None if whole)."""
    return ABSENT.get((table, benchmark))
