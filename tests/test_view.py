"""``awm view``: what a user reads about an episode, printed, as JSON and in the terminal browser.

The episodes are real: a scripted model plays ``shop``'s ``cheapest_tea`` through the
episode loop (list the tools, search, add the wrong tea to the cart, then a tool
call cut off mid-JSON, which ends the episode on the ``malformed_json`` check), and
the reference solutions of ``shop/aeropress_stock`` and ``bank/checking_balance``
play through the same loop; each is verified by the task's verifier against the
instance's database (awm_verify's rollout), and its verdict stored with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from awm_core.testing import wait_until

AWM = str(Path(sys.executable).parent / "awm")
# what the scripted model writes on its last turn: a call cut off mid-JSON
BROKEN = (
    "Added them. Now checking out <tool_call>"
    '{"name": "call_tool", "arguments": {"tool_name": "checkout", </tool_call>'
)


def _call(tool: str, args: dict[str, object], think: str) -> str:
    body = json.dumps({"name": "call_tool", "arguments": {"tool_name": tool, "arguments": args}})
    return f"<think>{think}</think>\n<tool_call>{body}</tool_call>"


async def _episodes() -> list[str]:
    """Three verified episodes as trajectory JSON lines: passed, failed on a turn, passed."""
    from awm_core.episode import Policy, ReferencePolicy
    from awm_core.llm.scripted import ScriptedBackend
    from awm_envs import EnvPool, load_environment
    from awm_verify.rollout import rollout_episode

    script = [
        '<think>Start by listing the tools.</think>\n<tool_call>{"name": "list_tools", '
        '"arguments": {}}</tool_call>',
        _call("search_products", {"query": "tea"}, "Find the teas."),
        _call("add_to_cart", {"product_id": 12, "quantity": 2}, "Earl Grey looks cheapest."),
        BROKEN,
    ]
    lines = []
    for env_id, task_id, scripted in (
        ("shop", "aeropress_stock", False),
        ("shop", "cheapest_tea", True),
        ("bank", "checking_balance", False),
    ):
        env = load_environment(env_id)
        task = next(t for t in env.tasks if t.id == task_id)
        policy = Policy(ScriptedBackend(script, name="scripted:broken")) if scripted else None
        async with EnvPool(env, size=1) as pool:
            done = await rollout_episode(
                pool,
                task,
                policy or ReferencePolicy(task),
                env_id=env.id,
                initial=env.template,
                verifier_source=env.verifier_source,
            )
        report = done.report
        assert report is not None
        # what awm bench and awm verify run keep; bank: a whole report, the other shape
        done.trajectory.metadata["verdict"] = (
            report.model_dump(mode="json") if env_id == "bank" else report.to_record()
        )
        lines.append(done.trajectory.model_dump_json())
    return lines


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder: ``trajectories.jsonl`` of the three episodes, as ``awm bench tasks`` keeps."""
    out = tmp_path_factory.mktemp("run")
    lines = asyncio.run(_episodes())
    (out / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps({"reports": [], "wall_s": 1.0}))
    return out


@pytest.fixture(scope="module")
def jsonl(run_dir: Path) -> Path:
    return run_dir / "trajectories.jsonl"


@pytest.fixture(scope="module")
def failed(jsonl: Path) -> dict[str, object]:
    """The failed episode's trajectory as stored."""
    return json.loads(jsonl.read_text().splitlines()[1])


def awm(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``awm`` with piped output (so ``awm view`` prints instead of browsing)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [AWM, *args], capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL
    )


def test_the_failed_episode_is_real(failed: dict[str, object]) -> None:
    steps = failed["steps"]
    assert isinstance(steps, list) and len(steps) == 4
    assert steps[3]["violation"] == "malformed_json"
    assert steps[3]["assistant"]["content"] == BROKEN
    assert failed["metadata"]["verdict"]["label"] == "Agent Error"  # type: ignore[index]


# --------------------------------------------------------------------------- --print


def test_print_shows_what_the_model_wrote_on_the_turn_that_failed(jsonl: Path) -> None:
    out = awm("view", str(jsonl), "--index", "1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count(BROKEN) == 2  # in the summary (why it failed) and at its step
    assert "step 3 failed the malformed_json check; the model wrote:" in text
    assert "violation: malformed_json: tool call is not valid JSON" in text
    assert "Earl Grey looks cheapest." in text  # the reasoning of an earlier turn
    assert 'call_tool → add_to_cart {"product_id": 12, "quantity": 2}' in text  # parsed call


def test_print_shows_every_tool_result_whole(jsonl: Path, failed: dict[str, object]) -> None:
    out = awm("view", str(jsonl), "--index", "1")
    search = failed["steps"][1]["result"]["content"]  # type: ignore[index]
    assert len(json.dumps(search)) > 600  # twice the old 300-character cut
    for item in search["items"]:
        assert f'"name": "{item["name"]}"' in out.stdout
    assert search["items"][-1]["sku"] in out.stdout  # the end of the result too
    tools = failed["steps"][0]["result"]["content"]  # type: ignore[index]
    assert len(json.dumps(tools)) > 5000
    for tool in tools:  # list_tools: every tool, the last one included
        assert f'"name": "{tool["name"]}"' in out.stdout


def test_print_shows_the_verdict_the_verifier_evidence_and_the_database_diff(jsonl: Path) -> None:
    text = awm("view", str(jsonl), "--index", "1").stdout
    assert "verdict: Agent Error   reward: -1.0   judge: code" in text
    assert "the verifier found the task not complete" in text  # the judge's reasoning
    assert "function: verify_cheapest_tea (native)" in text and "complete: False" in text
    assert '"added_cart_lines"' in text and '"expected_product": 9' in text  # evidence
    assert "table cart_items [changed; key: cart_item_id]: +1 inserted" in text
    assert "+ {cart_item_id: 24, user_id: 1, product_id: 12, quantity: 2" in text


def test_a_verdict_stored_as_a_whole_report_is_read_too(jsonl: Path) -> None:
    text = awm("view", str(jsonl), "--task", "checking_balance").stdout
    assert "verdict: Completed   reward: +1.0" in text
    assert "function: verify_checking_balance" in text
    assert "No database changes" in text


def test_a_single_trajectory_file_shows_the_episode_not_a_table(
    tmp_path: Path, failed: dict[str, object]
) -> None:
    one = tmp_path / "trajectory.json"
    one.write_text(json.dumps(failed))
    out = awm("view", str(one))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("shop / cheapest_tea ")
    assert BROKEN in out.stdout and "system prompt" in out.stdout
    assert not any(line.startswith("#   env") for line in out.stdout.splitlines())  # no table


def test_the_list_and_its_filters(run_dir: Path) -> None:
    listing = awm("view", str(run_dir))
    assert listing.returncode == 0, listing.stderr
    assert "2/3 completed, 1 failed (--failed lists them)" in listing.stdout
    for task in ("aeropress_stock", "cheapest_tea", "checking_balance"):
        assert task in listing.stdout
    shop = awm("view", str(run_dir), "--env", "shop")
    assert "checking_balance" not in shop.stdout and "2 of 3 episodes (env=shop)" in shop.stdout
    easy = awm("view", str(run_dir), "--complexity", "easy")  # from the environments' tasks
    assert "cheapest_tea" not in easy.stdout and "aeropress_stock" in easy.stdout
    only_failed = awm("view", str(run_dir), "--failed")  # one left: shown in full
    assert BROKEN in only_failed.stdout
    searched = awm("view", str(run_dir), "--search", "EARL GREY")
    assert "cheapest_tea" in searched.stdout and "aeropress_stock" not in searched.stdout
    nothing = awm("view", str(run_dir), "--failed", "--env", "bank")
    assert nothing.returncode == 0 and "no episode matches (failed, env=bank)" in nothing.stdout
    typo = awm("view", str(run_dir), "--env", "shpo")
    assert typo.returncode == 2 and "environment values here: bank, shop" in typo.stderr


def test_full_prints_every_selected_episode(run_dir: Path) -> None:
    out = awm("view", str(run_dir), "--env", "shop", "--full")
    assert out.stdout.count("\nsystem prompt ─") == 2 and BROKEN in out.stdout


def test_the_list_fits_80_columns_dropping_columns_not_cutting_ids(run_dir: Path) -> None:
    wide = awm("view", str(run_dir), columns=200).stdout
    assert "complexity" in wide and "steps" in wide
    narrow = awm("view", str(run_dir), columns=80).stdout
    table = narrow.split("\n\n")[0].splitlines()
    assert table and all(len(line) <= 80 for line in narrow.splitlines()), narrow
    assert "steps" not in table[0]  # the least useful column went first
    for kept in ("#", "env", "task", "verdict", "aeropress_stock", "checking_balance"):
        assert kept in narrow
    assert "…" not in narrow


def test_json_holds_each_episode_with_its_verdict_and_trajectory(run_dir: Path) -> None:
    out = awm("view", str(run_dir), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["total"], data["judged"], data["completed"]) == (3, 3, 2)
    by_task = {ep["task_id"]: ep for ep in data["episodes"]}
    bad = by_task["cheapest_tea"]
    assert bad["failed"] and bad["label"] == "Agent Error" and bad["complexity"] == "medium"
    assert bad["violation"] == {"step": 3, "check": "malformed_json"}
    assert bad["trajectory"]["steps"][3]["assistant"]["content"] == BROKEN
    assert bad["verdict"]["diff"]["tables"][0]["table"] == "cart_items"
    assert by_task["checking_balance"]["verdict"]["reward"] == 1.0  # read from the report shape
    only = json.loads(awm("view", str(run_dir), "--json", "--failed").stdout)
    assert [ep["task_id"] for ep in only["episodes"]] == ["cheapest_tea"]


def test_a_folder_is_searched_recursively_and_other_files_are_passed_over(
    tmp_path: Path, jsonl: Path
) -> None:
    lines = jsonl.read_text().splitlines()
    oracle = tmp_path / "bench-results" / "run1" / "tasks" / "oracle"
    oracle.mkdir(parents=True)
    (oracle / "trajectories.jsonl").write_text("\n".join(lines[:2]) + "\n")
    (oracle / "awm.jsonl").write_text(json.dumps({"key": "shop/x#0", "label": "Completed"}) + "\n")
    (tmp_path / "bench-results" / "run1" / "summary.json").write_text("{}")
    (tmp_path / "single.json").write_text(lines[2])
    out = awm("view", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "2/3 completed" in out.stdout
    assert "bench-results/run1/tasks/oracle/trajectories.jsonl" in out.stdout  # source column
    journal = awm("view", str(oracle / "awm.jsonl"))
    assert journal.returncode == 2 and f"awm view {oracle}" in journal.stderr


def test_a_last_line_cut_short_by_a_killed_run_is_left_out(tmp_path: Path, jsonl: Path) -> None:
    text = jsonl.read_text()
    cut = tmp_path / "trajectories.jsonl"
    cut.write_text(text[: len(text) - 200])  # the third episode half written
    out = awm("view", str(cut))
    assert out.returncode == 0, out.stderr
    assert "1/2 completed" in out.stdout and "checking_balance" not in out.stdout


def test_verdict_shapes() -> None:
    from awm_core.view import parse_verdict

    assert parse_verdict(None) is None and parse_verdict({}) is None
    bare = parse_verdict("Agent Error")  # a training rollout stores the label alone
    assert bare is not None and bare.label == "Agent Error" and not bare.completed
    flat = parse_verdict({"label": "Completed", "reward": 1.0, "reasoning": "ok", "judge": "code"})
    assert flat is not None and (flat.label, flat.reward, flat.diff) == ("Completed", 1.0, None)


# --------------------------------------------------------------------------- the browser


class Pane:
    """``awm view`` running in a real terminal: a detached tmux session of a fixed size."""

    def __init__(self, tmp: Path, *command: str, width: int = 100, height: int = 30) -> None:
        self.socket = str(tmp / "tmux.sock")
        conf = tmp / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g status off\n")
        self.name = f"view-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")}
        # tmux 3.3 does not always record a dead pane's status: the shell writes it down
        self.status_file = tmp / "exit-status"
        script = f"{shlex.join(command)}; echo $? > {shlex.quote(str(self.status_file))}"
        self.tmux(
            "-f", str(conf), "new-session", "-d", "-s", self.name,
            "-x", str(width), "-y", str(height), "sh", "-c", script, env=env,
        )  # fmt: skip

    def tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        out = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def shows(self, *texts: str, absent: tuple[str, ...] = (), what: str = "") -> None:
        def ok() -> bool:
            screen = self.screen()
            return all(t in screen for t in texts) and not any(t in screen for t in absent)

        wait_until(ok, timeout=60, what=f"{what}: {texts} shown, {absent} not\n{self.screen()}")

    def exit_status(self) -> str | None:
        """The command's exit status once it has ended, else None."""
        try:
            return self.status_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def pane_dir() -> Iterator[Path]:
    # a short path: a tmux socket path must fit in a sockaddr_un (about 100 bytes)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="awmv") as d:
        yield Path(d)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (CI has it)")
def test_the_browser_in_a_real_terminal(jsonl: Path, pane_dir: Path) -> None:
    pane = Pane(pane_dir, AWM, "view", str(jsonl))
    try:
        pane.shows("aeropress_stock", "cheapest_tea", "checking_balance", what="the list")
        pane.shows("3 of 3 episodes · 2/3 completed", what="the status line")
        pane.keys("Down", "Enter")  # the second episode: the one that failed
        pane.shows(
            "#1 shop / cheapest_tea · Agent Error",
            "step 3 failed the malformed_json check; the model wrote:",
            "Added them. Now checking out <tool_call>",
            "verdict: Agent Error",
            what="the failed episode opens with what the model wrote",
        )
        pane.keys("End")
        pane.shows("database diff", "table cart_items", what="the diff at the bottom")
        pane.keys("Escape")
        pane.shows("3 of 3 episodes", "aeropress_stock", what="back to the list")
        pane.keys("f")
        pane.shows("1 of 3 episodes", "filters: failed", absent=("aeropress_stock",), what="f")
        pane.keys("e")
        pane.shows("filters: failed, env=bank", "0 of 3 episodes", what="e cycles the env")
        pane.keys("x")
        pane.shows("3 of 3 episodes", "checking_balance", what="x clears the filters")
        pane.keys("q")
        last_q = [time.monotonic()]

        def exited() -> bool:
            if pane.exit_status() is not None:
                return True
            if time.monotonic() - last_q[0] > 10:  # a key typed while a loaded machine redraws
                pane.keys("q")
                last_q[0] = time.monotonic()
            return False

        wait_until(exited, timeout=90, what=f"q quits\n{pane.screen()}")
        assert pane.exit_status() == "0", f"{pane.exit_status()}\n{pane.screen()}"
    finally:
        pane.close()
