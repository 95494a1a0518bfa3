"""docs/bench.md's AgentDojo commands, run as written in this venv (the root venv's doc
test skips them: agentdojo is not installed there). Their expected output is marked
``agentdojo-doc-test-expect`` so that the root doc test, which requires every
``doc-test-expect`` to sit on a block it runs, leaves it to this test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"
BLOCK = re.compile(
    r"<!-- doc-test: skip needs agentdojo[^\n]*-->\n```bash\n(?P<body>.*?)```\n(?P<expect>(?:<!-- agentdojo-doc-test-expect: .*? -->\n)*)",
    re.S,
)


def test_the_documented_agentdojo_commands_run_and_print_what_the_docs_say(
    tmp_path: Path,
) -> None:
    found = BLOCK.search(DOCS.read_text(encoding="utf-8"))
    assert found, "docs/bench.md lost its AgentDojo block"
    expect = re.findall(r"<!-- agentdojo-doc-test-expect: (.*?) -->", found.group("expect"))
    assert expect
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AWM_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    printed = ""
    for line in found.group("body").splitlines():
        done = subprocess.run(
            shlex.split(line), cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        printed += done.stdout
    missing = [text for text in expect if text not in printed]
    assert not missing, printed
