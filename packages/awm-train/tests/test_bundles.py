"""Rows find their bundle again where the agent loop runs, or refuse with a clear, typed error."""

from __future__ import annotations

import importlib.util
import json
import logging
import pickle
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_envs import CATALOG_DIR, load_environment
from awm_train.bundles import (
    BundleMismatchError,
    BundleNotFoundError,
    BundleRef,
    BundleResolver,
    bundle_ref,
    check_bundles,
)
from awm_train.prepare import select_tasks, verl_row

HUBSERVER = Path(__file__).parents[2] / "awm-envs" / "tests" / "hubserver.py"


def copy_bundle(src_id: str, dest: Path) -> Path:
    """A catalog bundle copied to ``dest`` under the id ``dest.name``: a bundle outside the catalog."""
    shutil.copytree(CATALOG_DIR / src_id, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["id"] = dest.name
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return dest


def _extra(bundle: str | Path) -> dict[str, Any]:
    task = select_tasks([bundle], proven_only=False)[0]
    extra: dict[str, Any] = verl_row(task, "train", 0)["extra_info"]
    return extra


@pytest.fixture(autouse=True)
def no_env_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AWM_ENV_PATH", raising=False)
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))  # no pulled bundles but ours


def test_a_catalog_row_resolves_by_id_to_the_catalog_bundle() -> None:
    extra = _extra("shop")
    assert extra["bundle_source"] == "catalog" and extra["bundle_path"] == ""
    assert extra["bundle_sha256"] == load_environment("shop").digest
    env = BundleResolver().resolve(BundleRef.from_row(extra))
    assert env.path == (CATALOG_DIR / "shop").resolve()


def test_a_bundle_row_uses_its_path_then_awm_env_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = copy_bundle("shop", tmp_path / "made" / "shop-lab")
    extra = _extra(bundle)
    assert extra["env_id"] == "shop-lab" and extra["bundle_source"] == "bundle"
    assert extra["bundle_path"] == str(bundle.resolve())
    assert BundleResolver().resolve(BundleRef.from_row(extra)).path == bundle.resolve()

    # on a node without that path: the same bundle, found by name in AWM_ENV_PATH
    elsewhere = tmp_path / "node2"
    shutil.copytree(bundle, elsewhere / "shop-lab")
    monkeypatch.setenv("AWM_ENV_PATH", str(elsewhere))
    moved = {**extra, "bundle_path": str(tmp_path / "not-on-this-node" / "shop-lab")}
    env = BundleResolver().resolve(BundleRef.from_row(moved))
    assert env.path == (elsewhere / "shop-lab").resolve()


def test_other_content_is_refused_naming_env_digests_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bundle = copy_bundle("shop", tmp_path / "made" / "shop-lab")
    extra = _extra(bundle)
    edited = copy_bundle("shop", tmp_path / "node2" / "shop-lab")
    with (edited / "seed.sql").open("a") as f:
        f.write("\n-- edited on this node\n")
    monkeypatch.setenv("AWM_ENV_PATH", str(edited.parent))
    moved = {**extra, "bundle_path": str(tmp_path / "gone" / "shop-lab")}
    resolver = BundleResolver()
    with caplog.at_level(logging.ERROR, logger="awm_train.bundles"):
        for _ in range(3):  # every trajectory raises; the log says it once
            with pytest.raises(BundleMismatchError) as info:
                resolver.resolve(BundleRef.from_row(moved))
    err = info.value
    found = load_environment(edited).digest
    assert err.env_id == "shop-lab" and err.expected == extra["bundle_sha256"] != found
    text = str(err)
    assert "'shop-lab'" in text and extra["bundle_sha256"][:12] in text and found[:12] in text
    assert "AWM_ENV_PATH" in text and "awm train prepare" in text
    assert len([r for r in caplog.records if "shop-lab" in r.getMessage()]) == 1
    again = pickle.loads(pickle.dumps(err))  # it crosses Ray's process boundaries
    assert isinstance(again, BundleMismatchError) and str(again) == text


def test_a_bundle_found_nowhere_says_where_it_looked(tmp_path: Path) -> None:
    bundle = copy_bundle("shop", tmp_path / "made" / "shop-lab")
    extra = _extra(bundle)
    shutil.rmtree(bundle)
    with pytest.raises(BundleNotFoundError, match="shop-lab") as info:
        BundleResolver().resolve(BundleRef.from_row(extra))
    assert str(bundle.resolve()) in str(info.value) and "AWM_ENV_PATH" in str(info.value)
    assert [type(e) for e in check_bundles([extra, extra, _extra("shop")])] == [BundleNotFoundError]


def test_a_row_of_an_older_dataset_resolves_by_id_unchecked() -> None:
    env = BundleResolver().resolve(BundleRef.from_row({"env_id": "bank", "task_id": "x"}))
    assert env.id == "bank"


@pytest.fixture
def hub() -> Iterator[Any]:
    pytest.importorskip("huggingface_hub")
    spec = importlib.util.spec_from_file_location("awm_envs_test_hubserver", HUBSERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    with module.FakeHub() as server:
        yield server


def test_a_pulled_bundle_s_row_names_the_pull_that_brings_it_back(
    tmp_path: Path, hub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from awm_core.cli import build_cli
    from awm_envs.hub import pull_bundle, push_bundle

    source = copy_bundle("bank", tmp_path / "src" / "bank-hub")
    pushed = push_bundle(source, "alice/bank-hub", endpoint=hub.url)
    pulled = pull_bundle("alice/bank-hub", endpoint=hub.url)
    extra = _extra("bank-hub")  # found by name among the pulled bundles
    assert extra["bundle_source"] == "hub" and extra["bundle_path"] == str(pulled.path.resolve())
    assert extra["bundle_pull"] == f"alice/bank-hub --revision {pushed.commit} --endpoint {hub.url}"
    assert bundle_ref(load_environment(pulled.path)).pull == extra["bundle_pull"]

    shutil.rmtree(pulled.path)  # a node that never pulled it, and may not download
    monkeypatch.setenv("AWM_BUNDLE_PULL", "0")
    with pytest.raises(BundleNotFoundError) as info:
        BundleResolver().resolve(BundleRef.from_row(extra))
    command = f"awm envs pull {extra['bundle_pull']}"
    assert command in str(info.value) and "AWM_BUNDLE_PULL=0" in str(info.value)
    assert not pulled.path.exists()

    result = CliRunner().invoke(build_cli(), shlex.split(command)[1:])  # the fix, as printed
    assert result.exit_code == 0, result.output
    assert BundleResolver().resolve(BundleRef.from_row(extra)).digest == extra["bundle_sha256"]


def _pushed_row(tmp_path: Path, hub: Any) -> tuple[dict[str, Any], Path, str]:
    """A row prepared from a pulled bundle, then the pulled copy removed: another node's view."""
    from awm_envs.hub import pull_bundle, push_bundle

    source = copy_bundle("bank", tmp_path / "src" / "bank-hub")
    pushed = push_bundle(source, "alice/bank-hub", endpoint=hub.url)
    pulled = pull_bundle("alice/bank-hub", endpoint=hub.url)
    extra = _extra("bank-hub")
    shutil.rmtree(pulled.path)
    return extra, pulled.path, pushed.commit


def test_a_node_without_the_bundle_pulls_the_row_s_commit_and_checks_its_digest(
    tmp_path: Path, hub: Any
) -> None:
    extra, path, commit = _pushed_row(tmp_path, hub)
    hub.put("alice/bank-hub", {**hub.files("alice/bank-hub"), "NOTES.md": b"a later commit"})
    env = BundleResolver().resolve(BundleRef.from_row(extra))
    assert env.digest == extra["bundle_sha256"] and env.path.resolve() == path.resolve()
    origin = json.loads((path / ".awm-hub.json").read_text())
    assert origin["commit"] == commit  # the row's commit, not the repository's newer head
    assert not (path / "NOTES.md").exists()


def test_a_pulled_bundle_with_other_content_than_the_row_is_refused(
    tmp_path: Path, hub: Any
) -> None:
    extra, path, _ = _pushed_row(tmp_path, hub)
    forged = {**extra, "bundle_sha256": "0" * 64}  # data prepared from other content
    with pytest.raises(BundleMismatchError) as info:
        BundleResolver().resolve(BundleRef.from_row(forged))
    assert "pulled just now" in str(info.value) and "000000000000" in str(info.value)


def test_a_pull_the_hub_cannot_serve_is_listed_with_what_was_tried(
    tmp_path: Path, hub: Any
) -> None:
    extra, path, _ = _pushed_row(tmp_path, hub)
    hub.tamper["tasks.json"] = b"[]"  # a broken mirror: the content record catches it
    with pytest.raises(BundleNotFoundError) as info:
        BundleResolver().resolve(BundleRef.from_row(extra))
    message = str(info.value)
    assert f"awm envs pull {extra['bundle_pull']}" in message and "tasks.json" in message, message
    assert not path.exists()  # nothing half-downloaded is left where the next try would find it


@pytest.mark.parametrize(
    ("pull", "problem"),
    [
        ("", "no repository"),
        ("alice/x", "no --revision"),
        ("alice/x --revision", "no value"),
        ("alice/x --revision abc --mirror y", "unknown option"),
    ],
)
def test_an_unreadable_pull_field_is_reported_not_run(pull: str, problem: str) -> None:
    from awm_train.bundles import _pull_kwargs

    with pytest.raises(ValueError, match=problem):
        _pull_kwargs(pull)
