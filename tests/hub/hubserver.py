"""A small Hugging Face hub protocol server on loopback, serving plain folders, for the hub tests.

Written from what huggingface_hub (2.x) requires of the hub (``file_download.py``, ``hf_api.py``,
``utils/_http.py``): ``/{repo}/resolve/{rev}/{path}`` answers GET and HEAD with ``X-Repo-Commit``,
``ETag``, ``Content-Length`` and ``Accept-Ranges``, honours ``Range`` (206, or 416 with
``Content-Range: bytes */size``) and may redirect large files to a same-origin "CDN" path with
``X-Linked-Etag``/``X-Linked-Size`` as the real hub does; ``/api/models/{repo}[/revision/{rev}]`` and
``/api/models/{repo}/tree/{rev}`` list files (sizes with ``?blobs=true``); refusals carry the
``X-Error-Code`` header the client classifies by (``RepoNotFound``, ``GatedRepo``, ``RevisionNotFound``,
``EntryNotFound``).

A repository is ``<root>/<owner>/<name>/``; an optional ``.hub.json`` beside its files sets
``{"private": bool, "gated": bool, "allowed_tokens": [...], "delay_s": seconds, "tags": {"v1": "main"},
"listing_sizes": false, "range_cap": bytes}`` (``listing_sizes``: a hub whose file list gives no sizes, as
without ``?blobs=true``; ``range_cap``: a server that answers a Range with at most that many bytes, a 206
whose Content-Range says so).
Its commit is a hash of its files' names, sizes and mtimes. The server binds 127.0.0.1 on an
ephemeral port, counts the bytes of file content it sends per repository (and every Range it served),
bounds every delay, and stops itself after ``max_lifetime_s`` if a test forgets to.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
MAX_DELAY_S = 90.0


@dataclass
class Served:
    """What the server sent: content bytes per repository, and each file read as (repo, path, start, end, size)."""

    bytes_by_repo: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    reads: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, authorization seen)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def whole_weight_files(self) -> list[tuple[str, str]]:
        """Weight files some GET sent from the first to the last byte."""
        return [(repo, path) for repo, path, start, end, size in self.reads
                if path.endswith(_LFS_SUFFIXES) and start == 0 and end == size - 1 and size > 0]

    def reset(self) -> None:
        with self.lock:
            self.bytes_by_repo.clear()
            self.reads.clear()
            self.requests.clear()


class _Repo:
    def __init__(self, folder: Path, repo_id: str) -> None:
        self.folder = folder
        self.id = repo_id
        settings_file = folder / ".hub.json"
        self.settings: dict[str, Any] = json.loads(settings_file.read_text()) if settings_file.is_file() else {}
        self.files: dict[str, Path] = {}
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and not path.is_symlink() and rel != ".hub.json":
                self.files[rel] = path
        digest = hashlib.sha1()
        for rel, path in self.files.items():
            stat = path.stat()
            digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        self.sha = digest.hexdigest()

    def etag(self, rel: str) -> str:
        stat = self.files[rel].stat()
        return hashlib.sha256(f"{self.id}/{rel}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()

    def revisions(self) -> set[str]:
        return {"main", self.sha, *self.settings.get("tags", {})}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "specprobe-test-hub/1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the tests read ``served`` instead

    def _send(
        self, code: int, body: bytes | dict[str, Any] | list[Any] = b"", headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode() if isinstance(body, dict | list) else body
        self.send_response(code)
        fields = {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}
        for key, value in fields.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, code: int, error_code: str, message: str, extra: dict[str, str] | None = None) -> None:
        self._send(code, {"error": message}, {"X-Error-Code": error_code, "X-Error-Message": message, **(extra or {})})

    def _token(self) -> str | None:
        value = self.headers.get("Authorization", "")
        return value[7:] if value.startswith("Bearer ") else None

    def _open(self, owner: str, name: str, revision: str | None) -> _Repo | None:
        """The repository, or None once the refusal was sent (order: token, repository, access, revision)."""
        token = self._token()
        if token is not None and self.server.tokens and token not in self.server.tokens:
            self._error(401, "Unauthorized", "Invalid credentials in Authorization header")
            return None
        folder = self.server.root / owner / name
        if not (_NAME.match(owner) and _NAME.match(name)) or not folder.is_dir():
            self._error(404 if token else 401, "RepoNotFound", "Repository not found")
            return None
        repo = _Repo(folder, f"{owner}/{name}")
        delay = min(float(repo.settings.get("delay_s", 0)), MAX_DELAY_S)
        if delay > 0:
            self.server.stopping.wait(delay)  # ends early when the server stops
        granted = repo.settings.get("allowed_tokens")
        allowed = token is not None and (not granted or token in granted)
        if repo.settings.get("private") and not allowed:
            self._error(404 if token else 401, "RepoNotFound", "Repository not found")
            return None
        if repo.settings.get("gated") and not allowed:
            self._error(403 if token else 401, "GatedRepo", f"Access to model {repo.id} is restricted.")
            return None
        if revision is not None and revision not in repo.revisions():
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return repo

    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        try:
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.split("/")[1:]]
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            with self.server.served.lock:
                self.server.served.requests.append(
                    (self.command, self.path, "bearer" if self._token() is not None else "none")
                )
            if len(parts) >= 5 and parts[2] == "resolve":
                self._resolve(parts[0], parts[1], parts[3], "/".join(parts[4:]), may_redirect=True)
            elif len(parts) >= 5 and parts[0] == "_lfs":
                self._resolve(parts[1], parts[2], parts[3], "/".join(parts[4:]), may_redirect=False)
            elif len(parts) >= 4 and parts[:2] == ["api", "models"]:
                owner, name, rest = parts[2], parts[3], parts[4:]
                if not rest:
                    self._info(owner, name, None, query)
                elif rest[0] == "revision" and len(rest) >= 2:
                    self._info(owner, name, "/".join(rest[1:]), query)
                elif rest[0] == "tree" and len(rest) >= 2:
                    self._tree(owner, name, rest[1])
                else:
                    self._error(404, "RepoNotFound", "no such endpoint")
            else:
                self._error(404, "RepoNotFound", "no such endpoint")
        except (BrokenPipeError, ConnectionResetError):
            return

    def _resolve(self, owner: str, name: str, revision: str, path: str, *, may_redirect: bool) -> None:
        repo = self._open(owner, name, revision)
        if repo is None:
            return
        if path not in repo.files:
            self._error(404, "EntryNotFound", f"{path} does not exist", {"X-Repo-Commit": repo.sha})
            return
        file = repo.files[path]
        size = file.stat().st_size
        etag = repo.etag(path)
        headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if may_redirect and self.server.redirect_lfs and path.endswith(_LFS_SUFFIXES):
            host, port = self.server.server_address[:2]
            location = f"http://{host}:{port}/_lfs/{owner}/{name}/{repo.sha}/{quote(path)}"
            linked = {"Location": location, "X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(size)}
            self._send(302, b"", {**headers, **linked})
            return
        start, end, code = 0, size - 1, 200
        wanted = self.headers.get("Range")
        if wanted:
            match = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", wanted)
            if match is None or match.group(1) == match.group(2) == "":
                self._send(416, b"", {**headers, "Content-Range": f"bytes */{size}"})
                return
            if match.group(1) == "":
                start = max(0, size - int(match.group(2)))
            else:
                start = int(match.group(1))
                end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
            if start >= size or start > end:
                self._send(416, b"", {**headers, "Content-Range": f"bytes */{size}"})
                return
            cap = repo.settings.get("range_cap")
            if type(cap) is int and cap > 0:
                end = min(end, start + cap - 1)  # a short partial answer, honestly labelled
            code = 206
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        self.send_response(code)
        body = {"Content-Type": "application/octet-stream", "Content-Length": str(end - start + 1)}
        for key, value in {**headers, **body}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "GET" and end >= start:
            with self.server.served.lock:
                self.server.served.bytes_by_repo[repo.id] += end - start + 1
                self.server.served.reads.append((repo.id, path, start, end, size))
            with file.open("rb") as handle:
                self.wfile.flush()
                self.connection.sendfile(handle, start, end - start + 1)

    def _entry(self, repo: _Repo, rel: str) -> dict[str, Any]:
        size = repo.files[rel].stat().st_size
        entry: dict[str, Any] = {"type": "file", "path": rel, "size": size, "oid": repo.etag(rel)[:40]}
        if rel.endswith(_LFS_SUFFIXES):
            entry["lfs"] = {"oid": repo.etag(rel), "size": size, "pointerSize": 134}
        return entry

    def _info(self, owner: str, name: str, revision: str | None, query: dict[str, str]) -> None:
        repo = self._open(owner, name, revision)
        if repo is None:
            return
        siblings = []
        for rel in repo.files:
            sibling: dict[str, Any] = {"rfilename": rel}
            if query.get("blobs", "").lower() == "true" and repo.settings.get("listing_sizes", True):
                entry = self._entry(repo, rel)
                sibling.update(size=entry["size"], blobId=entry["oid"])
                if "lfs" in entry:
                    sibling["lfs"] = {"size": entry["size"], "sha256": entry["lfs"]["oid"], "pointerSize": 134}
            siblings.append(sibling)
        self._send(200, {
            "_id": repo.sha[:24], "id": repo.id, "modelId": repo.id, "author": owner, "sha": repo.sha,
            "private": bool(repo.settings.get("private")), "gated": "manual" if repo.settings.get("gated") else False,
            "disabled": False, "downloads": 0, "likes": 0, "tags": [], "siblings": siblings,
            "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
        })

    def _tree(self, owner: str, name: str, revision: str) -> None:
        repo = self._open(owner, name, revision)
        if repo is None:
            return
        self._send(200, [self._entry(repo, rel) for rel in repo.files])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, root: Path, tokens: tuple[str, ...], redirect_lfs: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.tokens = tokens
        self.redirect_lfs = redirect_lfs
        self.served = Served()
        self.stopping = threading.Event()


@dataclass
class HubServer:
    """A running server: ``url`` for HF_ENDPOINT, ``served`` for what it sent, ``root`` for its repositories."""

    url: str
    root: Path
    served: Served


@contextmanager
def serve_hub(
    root: Path, *, tokens: tuple[str, ...] = (), redirect_lfs: bool = False, max_lifetime_s: float = 600.0
) -> Iterator[HubServer]:
    """Serve the repositories under ``root`` on 127.0.0.1 (ephemeral port) until the block ends."""
    server = _Server(root, tokens, redirect_lfs)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    watchdog = threading.Timer(max_lifetime_s, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    host, port = server.server_address[:2]
    try:
        yield HubServer(url=f"http://{host}:{port}", root=root, served=server.served)
    finally:
        watchdog.cancel()
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


def publish(root: Path, repo_id: str, folder: Path, settings: dict[str, Any] | None = None) -> Path:
    """Publish ``folder``'s regular files as ``repo_id`` (hard links keep sparse files sparse)."""
    import os
    import shutil

    dest = root / repo_id
    dest.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            try:
                os.link(path, dest / path.name)
            except OSError:
                shutil.copy2(path, dest / path.name)
    if settings:
        (dest / ".hub.json").write_text(json.dumps(settings))
    return dest
