"""``awm envs pull`` / ``awm envs push`` against a local hub (tests/hubserver.py), never the internet.

The client is the real ``huggingface_hub``, pointed at the local server through
its endpoint setting; the bundles are real (made by ``awm envs init``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hubserver import FakeHub

from awm_core.cli import build_cli
from awm_envs.bundle.sources import list_envs, resolve_env
from awm_envs.hub import (
    BundleIntegrityError,
    HubConnectionError,
    HubPermissionError,
    HubRepoNotFoundError,
    HubUnavailableError,
    NotABundleRepoError,
    PulledBundleConflictError,
    PushRefusedError,
    hub_cache_dir,
    pull_bundle,
    push_bundle,
)
from awm_envs.hub.cache import ORIGIN_FILE
from awm_envs.hub.record import RECORD_FILE, build_record, record_bytes
from awm_envs.scaffold import init_bundle

pytest.importorskip("huggingface_hub")

BUNDLE = [
    "app.py",
    "manifest.json",
    "schema.sql",
    "seed.sql",
    "tasks.json",
    "tools.json",
    "verifiers.py",
]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh AWM_CACHE_DIR, and no ambient hub endpoint."""
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init_bundle("todo", tmp_path_factory.mktemp("src") / "todo")


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as server:
        yield server


def _files(path: Path) -> dict[str, bytes]:
    return {n: (path / n).read_bytes() for n in BUNDLE if (path / n).is_file()}


def test_a_pushed_bundle_pulls_back_byte_for_byte(bundle: Path, hub: FakeHub) -> None:
    pushed = push_bundle(bundle, "alice/todo", endpoint=hub.url)
    assert sorted(hub.files("alice/todo")) == sorted([*BUNDLE, RECORD_FILE])

    pulled = pull_bundle("alice/todo", endpoint=hub.url)

    assert pulled.path == hub_cache_dir() / "todo"
    assert _files(pulled.path) == _files(bundle)
    assert pulled.commit == pushed.commit and pulled.digest == pushed.digest
    origin = json.loads((pulled.path / ORIGIN_FILE).read_text())
    assert origin["repo_id"] == "alice/todo" and origin["commit"] == pushed.commit


def test_a_model_repository_works_like_a_dataset_one(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url, repo_type="model")
    pulled = pull_bundle("alice/todo", endpoint=hub.url, repo_type="model")
    assert _files(pulled.path) == _files(bundle)
    with pytest.raises(HubRepoNotFoundError):  # it is not also a dataset
        pull_bundle("alice/todo", endpoint=hub.url)


def test_the_cache_folder_follows_awm_cache_dir(bundle: Path, hub: FakeHub, tmp_path: Path) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    pulled = pull_bundle("alice/todo", endpoint=hub.url)
    assert pulled.path == tmp_path / "cache" / "envs" / "todo"
    assert not list((tmp_path / "cache" / "hub-staging").iterdir())  # staging cleaned up


def test_a_pulled_bundle_is_found_by_name(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    pulled = pull_bundle("alice/todo", endpoint=hub.url, name="alices-todo")

    assert resolve_env("alices-todo") == pulled.path
    assert ("alices-todo", "hub", pulled.path) in list_envs()


def test_hf_endpoint_is_the_default_endpoint(
    bundle: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    push_bundle(bundle, "alice/todo")
    assert pull_bundle("alice/todo").endpoint == hub.url


def test_a_tampered_download_is_rejected_and_nothing_is_installed(
    bundle: Path, hub: FakeHub
) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    hub.tamper["verifiers.py"] = (
        b"def verify_complete_groceries(*a):\n    return {'complete': True}\n"
    )

    with pytest.raises(BundleIntegrityError) as err:
        pull_bundle("alice/todo", endpoint=hub.url)

    assert "verifiers.py: sha256" in str(err.value)
    assert not (hub_cache_dir() / "todo").exists()


def test_a_tampered_download_leaves_the_installed_version_alone(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    first = pull_bundle("alice/todo", endpoint=hub.url)
    hub.tamper["seed.sql"] = b"INSERT INTO users VALUES (9, 'Mallory', 'm@example.com');\n"

    with pytest.raises(BundleIntegrityError):
        pull_bundle("alice/todo", endpoint=hub.url)

    assert _files(first.path) == _files(bundle)


def test_a_record_naming_other_files_is_refused_before_any_download(hub: FakeHub) -> None:
    files = {n: b"x" for n in ["manifest.json", "schema.sql", "seed.sql", "app.py"]}
    files["../../evil.py"] = b"import os"
    record = build_record(files, "todo")
    hub.put("mallory/todo", {**files, RECORD_FILE: record_bytes(record)})

    with pytest.raises(BundleIntegrityError, match="is not a bundle file"):
        pull_bundle("mallory/todo", endpoint=hub.url)

    assert not any("evil" in path for _, path in hub.requests)


def test_an_unknown_repository_is_a_typed_error(hub: FakeHub) -> None:
    with pytest.raises(HubRepoNotFoundError, match="no dataset repository 'nobody/nothing'"):
        pull_bundle("nobody/nothing", endpoint=hub.url)


def test_an_unknown_revision_is_a_typed_error(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    with pytest.raises(HubRepoNotFoundError, match="at revision 'v9'"):
        pull_bundle("alice/todo", endpoint=hub.url, revision="v9")


def test_an_unreachable_hub_is_a_connection_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        HubConnectionError, match=f"cannot reach the hub at http://127.0.0.1:{port}"
    ):
        pull_bundle("alice/todo", endpoint=f"http://127.0.0.1:{port}")


def test_a_connection_lost_mid_pull_is_a_connection_error(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    hub.drop.add("seed.sql")  # the server hangs up on this download

    with pytest.raises(HubConnectionError, match="Server disconnected"):
        pull_bundle("alice/todo", endpoint=hub.url)

    assert not (hub_cache_dir() / "todo").exists()


def test_without_huggingface_hub_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # its import now fails
    with pytest.raises(HubUnavailableError, match=r"pip install 'awm-envs\[hub\]'"):
        pull_bundle("alice/todo", endpoint="http://127.0.0.1:9")


def test_a_repository_without_a_bundle_is_not_a_bundle(hub: FakeHub) -> None:
    hub.put("bob/notes", {"README.md": b"# notes\n", "data.csv": b"a,b\n"})
    with pytest.raises(NotABundleRepoError, match="no manifest.json") as err:
        pull_bundle("bob/notes", endpoint=hub.url)
    assert err.value.files == ["README.md", "data.csv"]
    assert not hub_cache_dir().exists() or not any(hub_cache_dir().iterdir())


def test_a_bundle_uploaded_without_its_record_is_refused(bundle: Path, hub: FakeHub) -> None:
    hub.put("bob/todo", _files(bundle))
    with pytest.raises(NotABundleRepoError, match=f"no {RECORD_FILE}"):
        pull_bundle("bob/todo", endpoint=hub.url)


def test_a_folder_with_an_invalid_manifest_is_not_a_bundle(bundle: Path, hub: FakeHub) -> None:
    files = {**_files(bundle), "manifest.json": b'{"id": "Not An Id"}'}
    hub.put("bob/todo", {**files, RECORD_FILE: record_bytes(build_record(files, "todo"))})
    with pytest.raises(NotABundleRepoError, match="manifest.json is not a valid manifest"):
        pull_bundle("bob/todo", endpoint=hub.url)


def test_push_refuses_a_folder_that_does_not_load(
    bundle: Path, hub: FakeHub, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for name, data in _files(bundle).items():
        (broken / name).write_bytes(data)
    (broken / "seed.sql").write_text("INSERT INTO nowhere VALUES (1);\n")

    with pytest.raises(PushRefusedError, match="seed.sql") as err:
        push_bundle(broken, "alice/broken", endpoint=hub.url)

    assert err.value.problems and not hub.requests  # nothing was sent


def test_push_without_write_access_is_a_permission_error(
    bundle: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.write_token = "hf_secret"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(HubPermissionError, match="HF_TOKEN"):
        push_bundle(bundle, "alice/todo", endpoint=hub.url, token=False)

    monkeypatch.setenv("HF_TOKEN", "hf_secret")  # huggingface_hub's own token setting
    assert push_bundle(bundle, "alice/todo", endpoint=hub.url).repo_id == "alice/todo"


def test_push_deletes_bundle_files_the_bundle_no_longer_has(
    bundle: Path, hub: FakeHub, tmp_path: Path
) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    smaller = tmp_path / "todo"
    smaller.mkdir()
    for name, data in _files(bundle).items():
        if name != "tools.json":  # optional: derived from the app when absent
            (smaller / name).write_bytes(data)

    pushed = push_bundle(smaller, "alice/todo", endpoint=hub.url)

    assert pushed.deleted == ["tools.json"] and "tools.json" not in hub.files("alice/todo")
    pulled = pull_bundle("alice/todo", endpoint=hub.url)
    assert not (pulled.path / "tools.json").exists()


def test_pulling_again_updates_the_same_bundle(bundle: Path, hub: FakeHub, tmp_path: Path) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    first = pull_bundle("alice/todo", endpoint=hub.url)
    changed = tmp_path / "todo"
    changed.mkdir()
    for name, data in _files(bundle).items():
        (changed / name).write_bytes(data)
    with (changed / "seed.sql").open("a") as f:
        f.write("INSERT INTO items VALUES (5, 1, 'Water the plants', 0, '2025-01-15T08:00:00Z');\n")
    push_bundle(changed, "alice/todo", endpoint=hub.url)

    second = pull_bundle("alice/todo", endpoint=hub.url)

    assert second.path == first.path and second.commit != first.commit
    assert b"Water the plants" in (second.path / "seed.sql").read_bytes()
    old = pull_bundle("alice/todo", endpoint=hub.url, revision=first.commit)
    assert b"Water the plants" not in (old.path / "seed.sql").read_bytes()


def test_another_repos_bundle_is_not_replaced_without_force(bundle: Path, hub: FakeHub) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    push_bundle(bundle, "bob/todo", endpoint=hub.url)
    pull_bundle("alice/todo", endpoint=hub.url)

    with pytest.raises(PulledBundleConflictError, match="alice/todo"):
        pull_bundle("bob/todo", endpoint=hub.url)

    assert pull_bundle("bob/todo", endpoint=hub.url, name="bobs-todo").name == "bobs-todo"
    assert pull_bundle("bob/todo", endpoint=hub.url, force=True).repo_id == "bob/todo"


def test_cli_push_and_pull_print_json(bundle: Path, hub: FakeHub) -> None:
    runner = CliRunner()
    env = {"HF_ENDPOINT": hub.url}
    pushed = runner.invoke(
        build_cli(), ["envs", "push", str(bundle), "alice/todo", "--json"], env=env
    )
    assert pushed.exit_code == 0, pushed.output
    assert json.loads(pushed.output)["repo_id"] == "alice/todo"

    pulled = runner.invoke(build_cli(), ["envs", "pull", "alice/todo", "--json"], env=env)
    assert pulled.exit_code == 0, pulled.output
    out = json.loads(pulled.output)
    assert out["name"] == "todo" and out["files"] == BUNDLE and Path(out["path"]).is_dir()


def test_cli_errors_are_typed_in_json_and_one_line_otherwise(hub: FakeHub) -> None:
    runner = CliRunner()
    args = ["envs", "pull", "nobody/nothing", "--endpoint", hub.url]
    as_json = runner.invoke(build_cli(), [*args, "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)["error"] == "HubRepoNotFoundError"

    plain = runner.invoke(build_cli(), args)
    assert plain.exit_code == 1
    assert "Error: no dataset repository 'nobody/nothing'" in plain.output
    assert "Traceback" not in plain.output


@pytest.mark.slow
def test_a_pulled_bundle_validates_by_name(bundle: Path, hub: FakeHub, private_cache: Path) -> None:
    push_bundle(bundle, "alice/todo", endpoint=hub.url)
    pull_bundle("alice/todo", endpoint=hub.url)
    env = {**os.environ, "AWM_CACHE_DIR": str(private_cache)}
    done = subprocess.run(
        [sys.executable, "-m", "awm_core.cli", "envs", "validate", "todo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [result] = json.loads(done.stdout)
    assert result["passed"] and all(t["proof"] == "proven" for t in result["tasks"])
