"""Write a new bundle from the templates: a small to-do environment that validates as written.

The templates (``template/*.tmpl``) are the bundle's files with ``{{ENV_ID}}``,
``{{TITLE}}`` and ``{{DB_VAR}}`` placeholders. ``tools.json`` is not a template:
it is derived from the written ``app.py`` (the same derivation the loader
uses), so it cannot drift from the routes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from awm_core.errors import AWMError
from awm_envs.bundle.identity import BUNDLE_FILES, PRINCIPALS_JSON, TOOLS_JSON

TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
ENV_ID = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")
_TEMPLATED = tuple(name for name in BUNDLE_FILES if name not in (TOOLS_JSON, PRINCIPALS_JSON))


class ScaffoldError(AWMError):
    """``awm envs init`` cannot write the bundle (a bad name, or a folder that is in use)."""


def _title(env_id: str) -> str:
    return " ".join(w.capitalize() for w in re.split(r"[_\-]+", env_id) if w) or env_id


def init_bundle(name: str, directory: Path | None = None, *, force: bool = False) -> Path:
    """Write a new bundle with id ``name`` into ``directory`` (default ``./NAME``); returns it.

    Refuses a non-empty ``directory`` unless ``force`` (then the bundle's files
    are overwritten and other files are left alone).
    """
    if not ENV_ID.match(name):
        raise ScaffoldError(
            f"invalid environment name {name!r}: use lowercase letters, digits, '_' and '-', "
            f"starting with a letter or digit (it becomes the manifest id)"
        )
    target = Path(directory) if directory is not None else Path(name)
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(
            f"{target} is not empty; choose another name or --dir, or pass --force to "
            f"overwrite the bundle files in it"
        )
    values = {
        "{{ENV_ID}}": name,
        "{{TITLE}}": _title(name),
        "{{DB_VAR}}": re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_DB",
    }
    target.mkdir(parents=True, exist_ok=True)
    for file in _TEMPLATED:
        text = (TEMPLATE_DIR / f"{file}.tmpl").read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace(key, value)
        (target / file).write_text(text, encoding="utf-8")
    try:
        _write_tool_specs(target, name)
    except Exception:
        if not force:  # leave no half-made bundle behind
            shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def _write_tool_specs(target: Path, env_id: str) -> None:
    """``tools.json`` from the routes of the app just written."""
    from awm_envs.bundle.loader import import_app
    from awm_envs.bundle.toolspecs import derive_tool_specs

    module = import_app(target, env_id)
    specs = [t.model_dump(mode="json") for t in derive_tool_specs(module.app)]
    (target / TOOLS_JSON).write_text(
        json.dumps(specs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
