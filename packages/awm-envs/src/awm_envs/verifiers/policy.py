"""What verifier code may do, enforced in Python inside the verifier sandbox.

The OS layer (bubblewrap: no network, no host files, private PID namespace;
rlimits) is the boundary. This policy is defence in depth and, above all, the
source of precise errors: a verifier that imports ``socket`` gets "importing
module 'socket' is not allowed in verifier code", not a bare ``PermissionError``.

1. a CPU budget enforced by ``ITIMER_PROF`` (backed by the template's
   ``RLIMIT_CPU`` and wall clock) and the address-space limit of the fork;
2. a restricted ``__import__`` with an allowlist of pure-computation modules;
3. a ``sys.addaudithook`` policy, active only while verifier code runs, that
   rejects process creation, sockets, file writes, reads outside the job's two
   database copies and the standard library, and SQLite connections to any
   other file;
4. SQLite itself: connections open ``mode=ro`` with an authorizer that denies
   writes and ``ATTACH``, plus ``query_only``.

:mod:`awm_envs.verifiers.job` runs each verification under it.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import sys
import time
import types
from typing import Any
from urllib.parse import quote, unquote

# Pure-computation modules a verifier may import. Everything here is imported
# (and its lazy imports warmed) before the audit policy turns on.
ALLOWED_IMPORTS = frozenset(
    {
        "__future__",
        "sqlite3",
        "json",
        "re",
        "datetime",
        "math",
        "cmath",
        "collections",
        "itertools",
        "functools",
        "operator",
        "decimal",
        "fractions",
        "numbers",
        "statistics",
        "typing",
        "types",
        "dataclasses",
        "enum",
        "string",
        "difflib",
        "textwrap",
        "unicodedata",
        "heapq",
        "bisect",
        "copy",
        "calendar",
        "hashlib",
        "base64",
        "binascii",
        "uuid",
        "abc",
        "os",  # a proxy exposing only os.path (official verifiers check paths)
        # pure standard-library modules real generated verifiers use (AWM-1K imports time
        # and zoneinfo): the OS layer is the boundary, refusing them would buy nothing
        "time",
        "zoneinfo",
        "random",
        "secrets",
        "array",
        "struct",
        "pprint",
        "reprlib",
        "html",
        "csv",
        "contextlib",
        "graphlib",
        "ipaddress",
        "warnings",
        "weakref",
        "traceback",
        "keyword",
        "shlex",
        "fnmatch",
        "colorsys",
        "hmac",
        "zlib",
        "codecs",
    }
)
# Why a module outside the list is refused, for the few kinds a verifier might reach for:
# the message names the reason and what to do instead, not just "not allowed".
_REFUSED_BECAUSE = {
    **dict.fromkeys(
        ("subprocess", "multiprocessing", "signal", "pty", "_posixsubprocess", "concurrent",
         "threading", "_thread", "asyncio", "resource"),
        "verifiers cannot start processes or threads",
    ),
    **dict.fromkeys(
        ("socket", "_socket", "ssl", "urllib", "http", "ftplib", "smtplib", "poplib", "imaplib",
         "requests", "httpx", "select", "selectors"),
        "verifiers have no network",
    ),
    **dict.fromkeys(
        ("shutil", "tempfile", "pathlib", "glob", "io", "_io", "mmap", "fcntl", "pickle",
         "_pickle", "marshal", "zipfile", "tarfile", "gzip", "bz2", "lzma"),
        "verifiers read only the two databases they are given, through their connections or paths",
    ),
    **dict.fromkeys(
        ("ctypes", "_ctypes", "importlib", "zipimport", "sys", "builtins", "gc", "posix"),
        "verifiers cannot reach the interpreter's internals",
    ),
}  # fmt: skip

_REMOVED_BUILTINS = ("exec", "eval", "compile", "input", "breakpoint", "help", "exit", "quit")

# Audit events rejected while verifier code runs, by the part before the first dot.
_DENIED_EVENT_MODULES = frozenset(
    {
        "os",
        "socket",
        "subprocess",
        "ctypes",
        "mmap",
        "shutil",
        "pty",
        "fcntl",
        "signal",
        "urllib",
        "http",
        "ftplib",
        "smtplib",
        "poplib",
        "imaplib",
        "nntplib",
        "telnetlib",
        "webbrowser",
        "tempfile",
        "glob",
        "resource",
        "syslog",
        "pickle",
        "gc",
        "_posixsubprocess",
        "winreg",
        "_winapi",
    }
)
_DENIED_EVENTS = frozenset(
    {
        "sys.addaudithook",
        "sys.setprofile",
        "sys.settrace",
        "sys._current_frames",
        "builtins.input",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
    }
)
_DENIED_IMPORT_TOPS = frozenset(
    {
        "socket",
        "_socket",
        "ssl",
        "_ssl",
        "subprocess",
        "_posixsubprocess",
        "multiprocessing",
        "_multiprocessing",
        "ctypes",
        "_ctypes",
        "asyncio",
        "select",
        "selectors",
        "mmap",
        "urllib",
        "http",
        "ftplib",
        "smtplib",
        "pty",
        "fcntl",
        "threading",
        "_thread",
        "concurrent",
        "shutil",
        "tempfile",
        "pathlib",
        "glob",
        "importlib",
        "zipimport",
        "pickle",
        "_pickle",
        "marshal",
        "gc",
        "resource",
        "signal",
        "os",
        "posix",
        "io",
        "_io",
        "sys",
        "builtins",
    }
)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

# SQLite authorizer action codes a verifier's queries may use.
_SQL_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
    sqlite3.SQLITE_TRANSACTION,
    sqlite3.SQLITE_SAVEPOINT,
}
_READ_PRAGMAS = {
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "database_list",
    "collation_list",
    "function_list",
    "user_version",
    "schema_version",
    "page_count",
    "page_size",
    "encoding",
    "foreign_keys",
    "data_version",
}


class SandboxViolation(PermissionError):
    """Raised into verifier code when it attempts something the sandbox forbids."""


class ForbiddenImportError(ImportError):
    """Raised when a verifier imports a module outside the allowlist."""


class CpuLimitExceeded(BaseException):
    """The job's CPU budget ran out (a BaseException so ``except Exception`` cannot swallow it)."""


class _State:
    """Per-job policy state, reset by :func:`run_job`."""

    active = False
    in_hook = False
    trusted_connect = False
    allowed_files: frozenset[str] = frozenset()
    violations: list[str] = []
    cpu_exceeded = False
    cpu_deadline = 0.0


STATE = _State()
STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def _tz_dirs() -> tuple[str, ...]:
    """Where ``zoneinfo`` reads time-zone files (read-only, like the standard library)."""
    import zoneinfo

    dirs = [os.path.join(os.path.abspath(p), "") for p in zoneinfo.TZPATH]
    try:
        import tzdata  # type: ignore[import-not-found, unused-ignore]

        dirs.append(os.path.join(os.path.dirname(os.path.abspath(tzdata.__file__)), ""))
    except ImportError:
        pass
    return tuple(dirs)


_TZ_DIRS = _tz_dirs()


def _violate(what: str) -> SandboxViolation:
    msg = f"verifier sandbox: {what} is not allowed in verifier code"
    if len(STATE.violations) < 20:
        STATE.violations.append(msg)
    return SandboxViolation(msg)


def _db_path_from(database: str) -> str | None:
    """The file a sqlite3 ``database`` argument refers to; None for in-memory databases."""
    if database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        rest, _, query = database[5:].partition("?")
        if "mode=memory" in query or rest == ":memory:":
            return None
        return os.path.abspath(unquote(rest))
    return os.path.abspath(database)


def audit_hook(event: str, args: tuple[Any, ...]) -> None:
    if not STATE.active or STATE.in_hook:
        return
    STATE.in_hook = True
    try:
        _check_event(event, args)
    finally:
        STATE.in_hook = False


def _check_event(event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path, mode, flags = args[0], args[1], args[2]
        if not isinstance(path, str | bytes):
            raise _violate(f"opening file descriptor {path!r}")
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        writing = (mode is not None and any(c in str(mode) for c in "wax+")) or bool(
            (flags or 0) & _WRITE_FLAGS
        )
        if writing:
            raise _violate(f"opening {path!r} for writing")
        full = os.path.abspath(path)
        if full in STATE.allowed_files or full.startswith((STDLIB_DIR, *_TZ_DIRS)):
            return
        raise _violate(f"reading {path!r} (only the two database copies may be read)")
    if event == "sqlite3.connect":
        # Only the sqlite3.connect that verifiers import (``_readonly_connect``) may open
        # connections: it alone hardens them, and a raw ``sqlite3.Connection`` could ATTACH
        # any file on disk.
        if not STATE.trusted_connect:
            raise _violate(f"opening SQLite database {str(args[0])!r} directly")
        return
    if event == "sqlite3.connect/handle":
        return
    if event == "import":
        top = str(args[0]).partition(".")[0]
        if top in _DENIED_IMPORT_TOPS or top not in sys.stdlib_module_names:
            raise _violate(f"importing module {args[0]!r}")
        return
    if event in _DENIED_EVENTS or event.partition(".")[0] in _DENIED_EVENT_MODULES:
        raise _violate(f"operation {event!r}")


def _scratch_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    """Any connection a verifier opens itself: in-memory scratch work is fine, ATTACH is not."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        _violate("ATTACH/DETACH of another database")
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _readonly_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    """The two database connections: reads only."""
    if action in _SQL_ALLOWED:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in _READ_PRAGMAS and arg2 is None:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        _violate(f"PRAGMA {arg1}{'=' + str(arg2) if arg2 is not None else ''}")
    else:
        _violate(f"writing to the database (SQLite action {action}, {arg1!r})")
    return sqlite3.SQLITE_DENY


def _progress() -> int:
    """SQLite progress handler: abort a runaway query once the CPU budget is spent."""
    if STATE.cpu_exceeded or time.process_time() > STATE.cpu_deadline:
        STATE.cpu_exceeded = True
        return 1
    return 0


def harden(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(None)
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_readonly_authorizer)
    conn.set_progress_handler(_progress, 5000)
    return conn


def _readonly_connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect`` as verifiers see it: the job's copies only, read-only.

    ``:memory:`` gives a scratch database (writable, but unable to ATTACH anything).
    """
    target = _db_path_from(os.fsdecode(database) if isinstance(database, bytes) else str(database))
    if target is not None and target not in STATE.allowed_files:
        raise _violate(f"connecting to database {str(database)!r}")
    keep = {k: v for k, v in kwargs.items() if k in ("timeout", "detect_types", "isolation_level")}
    STATE.trusted_connect = True
    conn: sqlite3.Connection
    try:
        if target is None:
            conn = sqlite3.connect(":memory:", **keep)
        else:
            conn = sqlite3.connect(f"file:{quote(target)}?mode=ro&immutable=1", uri=True, **keep)
    finally:
        STATE.trusted_connect = False
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    if target is None:
        conn.set_authorizer(_scratch_authorizer)
        conn.set_progress_handler(_progress, 5000)
        return conn
    return harden(conn)


def _module_proxy(name: str, source: types.ModuleType, **overrides: Any) -> types.ModuleType:
    proxy = types.ModuleType(name, source.__doc__)
    proxy.__dict__.update({k: v for k, v in vars(source).items() if not k.startswith("__")})
    proxy.__dict__.update(overrides)
    return proxy


SQLITE_PROXY = _module_proxy("sqlite3", sqlite3, connect=_readonly_connect)
OS_PROXY = types.ModuleType("os", "os for verifiers: only os.path and os.sep")
OS_PROXY.__dict__.update(path=os.path, sep=os.sep)
PROXIES = {"sqlite3": SQLITE_PROXY, "os": OS_PROXY}
_real_import = builtins.__import__


def _restricted_import(
    name: str,
    globals: dict[str, Any] | None = None,
    locals: Any = None,
    fromlist: Any = (),
    level: int = 0,
) -> types.ModuleType:
    top = name.partition(".")[0]
    if level != 0 or top not in ALLOWED_IMPORTS:
        because = _REFUSED_BECAUSE.get(top)
        why = f" ({because})" if because else ""
        raise ForbiddenImportError(
            f"verifier sandbox: import of {name!r} is not allowed{why}; verifiers may import "
            f"only: {', '.join(sorted(ALLOWED_IMPORTS))}"
        )
    if top in PROXIES:
        if top == "os" and name not in ("os", "os.path"):
            raise ForbiddenImportError(f"verifier sandbox: only os.path is available, not {name!r}")
        return PROXIES[top]
    return _real_import(name, globals, locals, fromlist, level)


SAFE_BUILTINS = {k: v for k, v in vars(builtins).items() if k not in _REMOVED_BUILTINS}
SAFE_BUILTINS["__import__"] = _restricted_import


def on_cpu_signal(signum: int, frame: Any) -> None:
    STATE.cpu_exceeded = True
    if STATE.active:
        raise CpuLimitExceeded()
