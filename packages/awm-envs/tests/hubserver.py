"""A local Hugging Face hub: the part of the hub HTTP API that ``huggingface_hub`` uses for bundles.

A real HTTP server on 127.0.0.1 (a thread), reached through the client's
endpoint setting, so ``awm envs pull/push`` run their real code path with no
internet. It keeps repositories in memory as commits (file name -> bytes) and
answers:

* ``POST /api/repos/create`` (409 when the repository exists);
* ``GET /api/{type}s/{repo}[/revision/{rev}]``: the sha and the file list (siblings);
* ``POST /api/{type}s/{repo}/preupload/{rev}``: every file is a regular (inline) upload;
* ``POST /api/{type}s/{repo}/commit/{rev}``: the NDJSON commit (base64 files, deletions);
* ``HEAD``/``GET /[{type}s/]{repo}/resolve/{rev}/{path}``: file metadata and bytes.

Errors carry the hub's ``X-Error-Code`` header (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``) that the client maps to its exceptions.
``tamper`` makes the server send other bytes for a file than it stores, as a
broken mirror or a man in the middle would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass
class Repo:
    """One repository: its commits (oldest first), each a full file tree."""

    repo_type: str
    commits: list[tuple[str, dict[str, bytes]]] = field(default_factory=list)

    def head(self) -> tuple[str, dict[str, bytes]]:
        if not self.commits:
            return ("0" * 40, {})
        return self.commits[-1]

    def at(self, revision: str) -> tuple[str, dict[str, bytes]] | None:
        if revision == "main":
            return self.head()
        for sha, files in self.commits:
            if sha == revision:
                return sha, files
        return None


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """The server and its state; ``url`` is the endpoint to give the client."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.tamper: dict[str, bytes] = {}  # file name -> bytes served instead of the stored ones
        self.drop: set[str] = set()  # file names whose download the server hangs up on
        self.write_token: str | None = None  # when set, writes need "Authorization: Bearer TOKEN"
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                hub._handle(self, "GET")

            def do_HEAD(self) -> None:
                hub._handle(self, "HEAD")

            def do_POST(self) -> None:
                hub._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ state helpers

    def put(self, repo_id: str, files: dict[str, bytes], repo_type: str = "dataset") -> str:
        """Commit ``files`` (the whole tree) to a repository, creating it; returns the sha."""
        with self.lock:
            repo = self.repos.setdefault((repo_type, repo_id), Repo(repo_type))
            return self._commit(repo, files)

    def files(self, repo_id: str, repo_type: str = "dataset") -> dict[str, bytes]:
        """The head tree of a repository."""
        return dict(self.repos[(repo_type, repo_id)].head()[1])

    def _commit(self, repo: Repo, files: dict[str, bytes]) -> str:
        sha = hashlib.sha1(
            json.dumps(
                [len(repo.commits), sorted((k, git_blob_sha1(v)) for k, v in files.items())]
            ).encode()
        ).hexdigest()
        repo.commits.append((sha, dict(files)))
        return sha

    # ------------------------------------------------------------------ HTTP

    def _handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        path = unquote(urlsplit(req.path).path)
        self.requests.append((method, path))
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        try:
            if (
                method == "POST"
                and self.write_token is not None
                and req.headers.get("Authorization") != f"Bearer {self.write_token}"
            ):
                status, headers, payload = self._error(401, "Unauthorized", "Invalid credentials")
            else:
                status, headers, payload = self._route(method, path, body)
        except ConnectionAbortedError:  # the network fails mid-pull: no answer at all
            req.close_connection = True
            return
        except Exception as exc:  # a bug in the fake: say so loudly
            status, headers, payload = 500, {}, f"fake hub error: {exc!r}".encode()
        req.send_response(status)
        for key, value in headers.items():
            req.send_header(key, value)
        req.send_header("Content-Length", str(len(payload)))
        req.end_headers()
        if method != "HEAD":
            req.wfile.write(payload)

    @staticmethod
    def _json(status: int, data: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json", **headers}, json.dumps(data).encode()

    def _error(self, status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
        return self._json(status, {"error": message}, **{"X-Error-Code": code})

    def _split_repo(self, rest: str) -> tuple[str, str]:
        """``ns/name/tail...`` -> (``ns/name``, ``tail``)."""
        parts = rest.split("/", 2)
        return "/".join(parts[:2]), (parts[2] if len(parts) > 2 else "")

    def _route(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and path == "/api/repos/create":
            return self._create(json.loads(body))
        if path.startswith("/api/"):
            kind, rest = path[len("/api/") :].split("/", 1)
            repo_type = kind.rstrip("s")
            repo_id, tail = self._split_repo(rest)
            repo = self.repos.get((repo_type, repo_id))
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            if method == "GET" and (tail == "" or tail.startswith("revision/")):
                return self._info(repo_id, repo, tail[len("revision/") :] or "main")
            if method == "POST" and tail.startswith("preupload/"):
                files = json.loads(body)["files"]
                return self._json(
                    200,
                    {
                        "files": [
                            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                            for f in files
                        ]
                    },
                )
            if method == "POST" and tail.startswith("commit/"):
                return self._apply_commit(repo_id, repo, body)
            return self._error(404, "NotFound", f"no route {method} {path}")
        if "/resolve/" in path:
            prefix, _, rest = path.lstrip("/").partition("/resolve/")
            repo_type, repo_id = "model", prefix
            if prefix.startswith(("datasets/", "spaces/")):
                kind, repo_id = prefix.split("/", 1)
                repo_type = kind.rstrip("s")
            revision, _, filename = rest.partition("/")
            repo = self.repos.get((repo_type, repo_id))
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            found = repo.at(revision)
            if found is None:
                return self._error(404, "RevisionNotFound", f"Revision {revision} not found")
            sha, files = found
            if filename not in files:
                return self._error(404, "EntryNotFound", f"{filename} not found")
            if filename in self.drop:
                raise ConnectionAbortedError(filename)
            data = self.tamper.get(filename, files[filename])
            etag = git_blob_sha1(files[filename])  # the stored file's etag, as a mirror would keep
            return (
                200,
                {
                    "X-Repo-Commit": sha,
                    "ETag": f'"{etag}"',
                    "Content-Type": "application/octet-stream",
                },
                data,
            )
        return self._error(404, "NotFound", f"no route {method} {path}")

    def _create(self, payload: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        repo_id = f"{payload.get('organization') or 'me'}/{payload['name']}"
        repo_type = payload.get("type") or "model"
        with self.lock:
            url = f"{self.url}/{repo_type}s/{repo_id}"
            if (repo_type, repo_id) in self.repos:  # the hub names the existing repo's url too
                return self._json(409, {"error": "You already created this repo", "url": url})
            self.repos[(repo_type, repo_id)] = Repo(repo_type)
        return self._json(200, {"url": url, "name": repo_id})

    def _info(self, repo_id: str, repo: Repo, revision: str) -> tuple[int, dict[str, str], bytes]:
        found = repo.at(revision)
        if found is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        sha, files = found
        return self._json(
            200,
            {
                "id": repo_id,
                "sha": sha,
                "private": False,
                "siblings": [{"rfilename": name} for name in sorted(files)],
            },
        )

    def _apply_commit(
        self, repo_id: str, repo: Repo, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            files = dict(repo.head()[1])
            for line in body.splitlines():
                item = json.loads(line)
                value = item["value"]
                if item["key"] == "file":
                    files[value["path"]] = base64.b64decode(value["content"])
                elif item["key"] == "deletedFile":
                    files.pop(value["path"], None)
                elif item["key"] != "header":
                    return self._error(400, "BadRequest", f"unsupported commit item {item['key']}")
            sha = self._commit(repo, files)
        prefix = "datasets/" if repo.repo_type == "dataset" else ""
        return self._json(
            200, {"commitUrl": f"{self.url}/{prefix}{repo_id}/commit/{sha}", "commitOid": sha}
        )
