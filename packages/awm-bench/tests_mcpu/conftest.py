"""The stand-in servers of ``standin/`` for the tests here: a server list in
MCP-Universe's format that runs them under the names ``google-maps`` and ``weather``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awm_bench.mcpu.upstream import SERVERS_ENV

STANDIN = Path(__file__).parent / "standin"
STANDIN_SERVERS = {"google-maps": "google_maps_server.py", "weather": "weather_server.py"}


@pytest.fixture(scope="session")
def standin_server_list(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server list (``python3`` is the driver venv's: MCP-Universe finds its Python
    servers on PATH, and the driver puts its venv first)."""
    path = tmp_path_factory.mktemp("standin") / "server_list.json"
    entries = {
        name: {"stdio": {"command": "python3", "args": [str(STANDIN / script)]}}
        for name, script in STANDIN_SERVERS.items()
    }
    path.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def standins(standin_server_list: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-ins swapped in for the test (``AWM_MCPU_SERVERS``)."""
    monkeypatch.setenv(SERVERS_ENV, str(standin_server_list))
    return standin_server_list
