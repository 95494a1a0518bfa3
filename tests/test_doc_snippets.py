"""Every command and code block a user would copy from the docs runs as written.

Each ``bash``/``sh``/``python``/``toml`` block (and each block without a
language) in README.md, packages/*/README.md and docs/*.md carries a marker on
the line before its opening fence:

``<!-- doc-test -->``
    run it: a shell block line by line (each must exit 0), a Python block as a
    script. The blocks of one file run in order in one scratch folder, so a
    later block may use what an earlier one wrote (``trajectory.json``).
``<!-- doc-test: serve -->``
    each line starts a server (``awm envs serve ...``): it must answer
    (``initialize`` over stdio, its "serving" line over HTTP), then is stopped.
``<!-- doc-test: skip REASON -->``
    not run here, for the stated reason (network, a GPU, a model endpoint, a
    dataset, or a slow command covered by the named test).

Where a reader relies on what a block prints, one or more lines right after its
closing fence say so, ``<!-- doc-test-expect: TEXT -->``: TEXT must appear in
what the block's commands print (stdout), so a documented command that runs but
prints something else fails.

A block without a marker fails :func:`test_every_copyable_block_is_marked`, so
a new snippet cannot be added untested by accident. ``uv run`` in front of a
command is dropped (the tests already run inside the workspace environment);
``text`` and ``json`` blocks are output or reference material, not commands.
The README's two marked commands (``main-command``, ``test-command``) are
what ``.ci/run`` executes, so they are not run again here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(
    [ROOT / "README.md", *ROOT.glob("packages/*/README.md"), *ROOT.glob("docs/*.md")],
    key=lambda p: str(p.relative_to(ROOT)),
)
COPYABLE = {"", "bash", "sh", "shell", "console", "python", "py", "toml"}
CI_MARKERS = ("<!-- main-command -->", "<!-- test-command -->")
EXPECT = re.compile(r"<!--\s*doc-test-expect:\s*(?P<text>.+?)\s*-->")
MARKER = re.compile(r"<!--\s*doc-test(?::\s*(?P<mode>serve|skip)\b\s*(?P<reason>.*?))?\s*-->")
BIN = Path(sys.executable).parent


@dataclass
class Block:
    """One fenced code block and the marker in front of it."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # "run", "serve", "skip", "ci" or None
    expect: tuple[str, ...] = ()  # texts its output must contain (doc-test-expect lines)

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def parse_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        before = lines[i - 1].strip() if i > 0 else ""
        marker: str | None = None
        found = MARKER.fullmatch(before)
        if found:
            marker = found.group("mode") or "run"
            if marker == "skip" and not found.group("reason"):
                marker = "skip-without-reason"
        elif before in CI_MARKERS:
            marker = "ci"
        expect: list[str] = []
        k = j + 1
        while k < len(lines) and (found_expect := EXPECT.fullmatch(lines[k].strip())):
            expect.append(found_expect.group("text"))
            k += 1
        text = "\n".join(lines[i + 1 : j])
        blocks.append(Block(path, i + 1, fence.group(1), text, marker, tuple(expect)))
        i = j + 1
    return blocks


ALL_BLOCKS = [b for doc in DOCS for b in parse_blocks(doc)]


def command_lines(block: Block) -> list[str]:
    """The commands of a shell block, with ``uv run`` dropped and continuation lines joined."""
    commands: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        line = re.sub(r"^\s*(?:\.\s+\./uv-env\.sh\s*&&\s*)?uv run\s+", "", line)
        commands.append(line)
    return commands


def scratch_env(tmp: Path) -> dict[str, str]:
    """The environment snippets run in: this venv's scripts first, a private cache, no keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AWM_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["AWM_CACHE_DIR"] = str(tmp / "cache")  # a fresh install: no validation records
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "200"
    return env


def check_output(block: Block, printed: str) -> None:
    """Every ``doc-test-expect`` text of the block appears in what it printed."""
    missing = [text for text in block.expect if text not in printed]
    assert not missing, (
        f"{block.where}: the docs promise output containing {missing}, "
        f"but the block printed:\n{printed[-3000:]}"
    )


def run_shell(block: Block, cwd: Path, env: dict[str, str]) -> None:
    printed = ""
    for command in command_lines(block):
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (
            f"{block.where}: `{command}` exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        printed += done.stdout
    check_output(block, printed)


def run_python(block: Block, cwd: Path, env: dict[str, str]) -> None:
    script = cwd / f"snippet_{block.line}.py"
    script.write_text(block.text + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, script.name], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (
        f"{block.where}: the Python snippet exited {done.returncode}\n"
        f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-3000:]}"
    )
    check_output(block, done.stdout)


def run_server(command: str, where: str, cwd: Path, env: dict[str, str]) -> None:
    """Start ``command``, wait until it answers, stop it."""
    argv = shlex.split(command.split("#", 1)[0])
    stdio = "--stdio" in argv
    if not stdio and "--port" in argv:  # a free port instead of the documented one
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            argv[argv.index("--port") + 1] = str(s.getsockname()[1])
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        if stdio:
            request = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "doc-test", "version": "0"},
                },
            }
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline() or b"{}")
            assert "result" in reply, f"{where}: `{command}` did not answer initialize: {reply}"
        else:
            deadline = time.monotonic() + 120
            seen = b""
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                seen += line
                if b"serving" in line or not line:
                    break
            assert b"serving" in seen, f"{where}: `{command}` never said it was serving: {seen!r}"
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_every_copyable_block_is_marked() -> None:
    unmarked = [
        f"{b.where} ({b.lang or 'no language'})"
        for b in ALL_BLOCKS
        if b.lang in COPYABLE and b.marker in (None, "skip-without-reason")
    ]
    assert not unmarked, (
        "code blocks a user would copy need a marker on the line before the fence "
        "(<!-- doc-test -->, <!-- doc-test: serve --> or <!-- doc-test: skip REASON -->); "
        "unmarked or skipped without a reason:\n  " + "\n  ".join(unmarked)
    )


def test_the_marker_parser_finds_markers(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- doc-test -->\n```bash\nawm --help\n```\n"
        "<!-- doc-test: skip needs a GPU -->\n```python\nimport torch\n```\n"
        "```bash\nawm envs list\n```\n"
    )
    assert [b.marker for b in parse_blocks(doc)] == ["run", "skip", None]


def test_expected_output_is_parsed_and_enforced(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- doc-test -->\n```bash\necho hello world\n```\n"
        "<!-- doc-test-expect: hello -->\n<!-- doc-test-expect: world -->\n"
        "<!-- doc-test -->\n```bash\necho goodbye\n```\n<!-- doc-test-expect: hello -->\n"
    )
    good, bad = parse_blocks(doc)
    assert good.expect == ("hello", "world") and bad.expect == ("hello",)
    env = {**os.environ}
    run_shell(good, tmp_path, env)
    with pytest.raises(AssertionError, match="promise output containing"):
        run_shell(bad, tmp_path, env)


def test_the_docs_pin_the_output_readers_rely_on() -> None:
    """The README's everyday commands carry expectations, and none hangs on an unrun block."""
    pinned = [b for b in ALL_BLOCKS if b.expect]
    assert all(b.marker == "run" for b in pinned), [b.where for b in pinned if b.marker != "run"]
    readme = [b for b in pinned if b.path == ROOT / "README.md"]
    assert len(readme) >= 4, [b.where for b in readme]


RUN_DOCS = sorted({b.path for b in ALL_BLOCKS if b.marker in ("run", "serve")}, key=str)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("doc", RUN_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_snippets_run_as_written(doc: Path, tmp_path: Path) -> None:
    env = scratch_env(tmp_path)
    for block in parse_blocks(doc):
        if block.marker == "run":
            if block.lang in ("python", "py"):
                run_python(block, tmp_path, env)
            else:
                run_shell(block, tmp_path, env)
        elif block.marker == "serve":
            for command in command_lines(block):
                run_server(command, block.where, tmp_path, env)
