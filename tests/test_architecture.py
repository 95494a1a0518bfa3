"""docs/architecture.md describes the tree that exists, and the lint contracts enforce it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text()
ENVS = ROOT / "packages" / "awm-envs" / "src" / "awm_envs"
SYNTH = ROOT / "packages" / "awm-synth" / "src" / "awm_synth"


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n### ", start + len(title))
    return DOC[start : end if end != -1 else None]


@pytest.mark.parametrize(("package", "src"), [("awm-envs", ENVS), ("awm-synth", SYNTH)])
def test_every_folder_is_documented_and_every_documented_folder_exists(
    package: str, src: Path
) -> None:
    table = _section(f"### {package}")
    documented = set(re.findall(r"^\| `(\w+)/` \|", table, flags=re.MULTILINE))
    actual = {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert documented == actual


@pytest.mark.parametrize(
    ("package", "container"), [("awm-envs", "awm_envs"), ("awm-synth", "awm_synth")]
)
def test_the_documented_layers_are_the_enforced_layers(package: str, container: str) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = {c["name"]: c for c in config["contracts"]}
    inner = next(c for c in contracts.values() if c.get("containers") == [container])
    layered = [name.strip() for layer in inner["layers"] for name in layer.split("|")]
    table = _section(f"### {package}")
    for folder in layered:
        if (ROOT / "packages" / package / "src" / container / folder).is_dir():
            assert f"| `{folder}/` |" in table, f"{folder}/ is enforced but not documented"
    packages = next(c for c in contracts.values() if "awm_core" in c.get("layers", []))
    assert packages["layers"][-1] == "awm_core" and packages["layers"][-2] == "awm_envs"


def test_every_top_level_awm_core_module_is_documented() -> None:
    table = _section("### awm-core")
    core = ROOT / "packages" / "awm-core" / "src" / "awm_core"
    modules = {p.name for p in core.glob("*.py") if p.name != "__init__.py"}
    modules |= {p.name + "/" for p in core.iterdir() if (p / "__init__.py").is_file()}
    missing = sorted(m for m in modules if f"`{m}`" not in table)
    assert not missing, f"not in docs/architecture.md: {missing}"


def _module_name(path: Path, src: Path) -> str | None:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if all(p.isidentifier() for p in parts) else None


def _import_graph() -> dict[str, set[str]]:
    """Every awm module -> the awm modules it imports (at the top, in functions, for typing).

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so a module also
    depends on every package above what it imports: that is how a circle forms through a
    package's ``__init__`` without any module naming the other side directly.
    """
    import ast

    sources: dict[str, Path] = {}
    for src in sorted(ROOT.glob("packages/*/src")):
        for path in src.rglob("*.py"):
            name = _module_name(path, src)
            if name is not None:
                sources[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        edges: set[str] = set()
        for target in targets:
            parts = target.split(".")
            edges.update(
                ".".join(parts[:i])
                for i in range(1, len(parts) + 1)
                if ".".join(parts[:i]) in sources
            )
        edges.discard(name)
        graph[name] = edges
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's components, iteratively (the graph is deeper than the recursion limit allows)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def test_no_import_circle_spans_two_packages() -> None:
    crossing = [
        sorted(c)
        for c in _strongly_connected(_import_graph())
        if len({m.split(".")[0] for m in c}) > 1
    ]
    assert not crossing, f"import circles across packages: {crossing}"


def test_the_circle_finder_sees_a_circle_through_a_package_init() -> None:
    graph = {"a": {"a.x"}, "a.x": {"b.y"}, "b": set(), "b.y": {"b", "a"}, "c": {"a"}}
    circles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert circles == [{"a", "a.x", "b.y"}]


def test_the_layer_contracts_ignore_no_import() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    ignored = {c["name"]: c.get("ignore_imports") for c in config["contracts"]}
    ignored["(root)"] = config.get("ignore_imports")
    assert not any(ignored.values()), f"import-linter exceptions: {ignored}"


def test_no_module_imports_another_modules_private_name() -> None:
    """A name another module needs is part of its module's interface: no leading underscore."""
    import ast

    private = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        if "catalog" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("awm_"):
                private += [
                    f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not private, private
