"""A small local Hub for tests: the HTTP API that ``snapshot_download``,
``datasets.load_dataset`` and the upload calls of ``HfApi`` use.

Standard library only: ``ThreadingHTTPServer`` on 127.0.0.1, an ephemeral
port, HTTP/1.1 keep-alive.

    hub = FakeHub()
    sha = hub.publish("org/data", folder, lfs=lambda path, size: path.endswith(".mp4"))
    with hub.serve() as url:          # set HF_ENDPOINT=url
        ...
    hub.downloads()                   # GET .../resolve/... requests served

Endpoints (``{t}`` is models, datasets or spaces; the resolve URL of a model
has no type prefix):

- ``GET /api/{t}/{repo}[/revision/{rev}]``: repo info (``id``, ``sha``,
  ``siblings``).
- ``GET /api/{t}/{repo}/tree/{rev}[/{path}]?recursive=&cursor=``: tree
  listing, ``page_size`` entries per page, next page in a ``Link`` header.
  A file entry has ``oid`` (git blob sha1), ``size`` and, for LFS files,
  ``lfs: {oid: sha256, size, pointerSize}``.
- ``HEAD|GET /[{t}/]{repo}/resolve/{rev}/{path}``: headers ``X-Repo-Commit``,
  ``ETag`` (blob sha1, or the SHA-256 for LFS files, which also get
  ``X-Linked-Etag`` and ``X-Linked-Size``), ``Content-Length``,
  ``Accept-Ranges``; ``Range: bytes=a-[b]`` answers 206 (416 if ``a`` is
  past the end); an ``If-Range`` that is not the current ETag gets the whole
  file (200).
- ``POST /api/{t}/{repo}/paths-info/{rev}`` (form fields ``paths``, repeated,
  and ``expand``; what ``HfApi.get_paths_info`` and ``HfFileSystem.info``
  send): the entries of the paths that exist, files as in the tree listing,
  folders as ``directory`` entries; no token needed (a public repo).
- Errors: 404 with ``X-Error-Code`` ``RepoNotFound``, ``RevisionNotFound``
  or ``EntryNotFound``.

``datasets.load_dataset(repo, name)`` with ``HF_ENDPOINT`` set reads a
published repo through these: the repo info of ``main`` then of its commit,
HEADs for a loading script, ``.huggingface.yaml`` and ``dataset_infos.json``
(404), the README's ``configs:``, tree listings to expand its patterns, and
the data files' resolve URLs.

Uploads (what ``HfApi.create_repo`` / ``upload_file`` / ``upload_folder``
send; every file is a regular git blob):

- ``GET /api/whoami-v2``: ``{"name": hub.user}`` for a ``Bearer`` token in
  ``hub.tokens`` (401 otherwise).
- ``POST /api/repos/create`` (``name``, ``organization``, ``type``,
  ``visibility``): an empty repo (409 when it exists); ``private`` recorded.
- ``POST /api/{t}/{repo}/preupload/{rev}``: every file ``regular``.
- ``POST /api/{t}/{repo}/commit/{rev}`` (NDJSON: a ``header``, ``file``
  entries with base64 ``content``, ``deletedFile`` entries): a new commit on
  top of ``rev``'s tree; ``{"commitUrl", "commitOid"}``.  Each is logged in
  ``hub.commits`` (repo, message, paths, the token that sent it).

Faults: ``drop_once(path, after)`` sends the headers and the first ``after``
bytes of the next full GET of ``path`` and closes the connection;
``fail_get(path, status, times)`` answers the next ``times`` GETs of ``path``
with ``status``.  Observation: ``requests`` (``Logged``: method, path,
range, status).
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

TYPES = ("models", "datasets", "spaces")
_API = re.compile(r"^/api/(?P<t>models|datasets|spaces)/(?P<rest>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass(frozen=True)
class Blob:
    data: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def pointer(self) -> bytes:
        """The git LFS pointer file stored in git for an LFS blob."""
        return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
                f"size {len(self.data)}\n").encode()

    @property
    def git_oid(self) -> str:
        """Git blob sha1 of what git stores: the content, or its pointer."""
        stored = self.pointer if self.lfs else self.data
        return hashlib.sha1(b"blob %d\0" % len(stored) + stored).hexdigest()


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    commits: dict[str, dict[str, Blob]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str) -> str | None:
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


@dataclass(frozen=True)
class Logged:
    method: str
    path: str  # URL path, unquoted, without the query
    range: str | None
    status: int


class FakeHub:
    def __init__(self, page_size: int = 1000) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.page_size = page_size
        self.requests: list[Logged] = []
        self._drops: dict[str, int] = {}
        self._fails: dict[str, list[int]] = {}
        self._retry_after: dict[str, str] = {}  # path -> the Retry-After its scripted failures send
        self._corrupt: dict[str, int] = {}  # path -> how many more GETs serve it with its last byte flipped
        self._lock = threading.Lock()
        self.url = ""
        self.user = "avhb-tester"
        self.tokens: set[str] = set()  # tokens the whoami and upload endpoints accept
        self.private: dict[str, bool] = {}  # repo id -> created private
        self.commits: list[dict] = []  # upload commits: repo, message, paths, token

    # ------------------------------------------------------------ content

    def publish(self, repo_id: str, files: Path | dict[str, bytes], *, repo_type: str = "dataset",
                branch: str = "main", tags: tuple[str, ...] = (),
                lfs: Callable[[str, int], bool] = lambda path, size: False) -> str:
        """Commit ``files`` (a folder, read now, or path -> bytes) as the new
        head of ``branch``; returns the commit sha."""
        if isinstance(files, Path):
            items = {p.relative_to(files).as_posix(): p.read_bytes()
                     for p in sorted(files.rglob("*")) if p.is_file()}
        else:
            items = dict(files)
        tree = {path: Blob(data, lfs(path, len(data))) for path, data in sorted(items.items())}
        repo = self.repos.setdefault((repo_type + "s", repo_id), Repo(repo_id, repo_type))
        h = hashlib.sha1(f"{repo_type}/{repo_id}\0{len(repo.commits)}".encode())
        for path, blob in tree.items():
            h.update(f"{path}\0{blob.git_oid}\0".encode())
        sha = h.hexdigest()
        repo.commits[sha] = tree
        for ref in (branch, *tags):
            repo.refs[ref] = sha
        return sha

    # ------------------------------------------------------------- faults

    def drop_once(self, path: str, after: int) -> None:
        with self._lock:
            self._drops[path] = after

    def fail_get(self, path: str, status: int = 403, times: int = 1, retry_after: str | None = None) -> None:
        """The next ``times`` GETs of ``path`` answer ``status`` (with a
        ``Retry-After: retry_after`` header when given)."""
        with self._lock:
            self._fails.setdefault(path, []).extend([status] * times)
            if retry_after is not None:
                self._retry_after[path] = retry_after

    def corrupt_next(self, path: str, times: int = 1) -> None:
        """The next ``times`` GETs of ``path`` answer 200 with the right
        length and headers but the last byte flipped."""
        with self._lock:
            self._corrupt[path] = self._corrupt.get(path, 0) + times

    def _take_corrupt(self, path: str) -> bool:
        with self._lock:
            left = self._corrupt.get(path, 0)
            if left:
                self._corrupt[path] = left - 1
            return bool(left)

    # -------------------------------------------------------- observation

    def downloads(self, path: str | None = None) -> list[Logged]:
        """GET requests on resolve URLs (file downloads), optionally for the
        files whose repo path is ``path``."""
        out = [r for r in self.requests if r.method == "GET" and "/resolve/" in r.path]
        if path is not None:
            out = [r for r in out if r.path.endswith("/" + path)]
        return out

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # ------------------------------------------------------------ serving

    @contextmanager
    def serve(self) -> Iterator[str]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self.url
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)

    def _take_fault(self, path: str) -> tuple[int | None, int | None]:
        with self._lock:
            fails = self._fails.get(path)
            status = fails.pop(0) if fails else None
            drop = self._drops.pop(path, None) if status is None else None
        return status, drop

    def _log(self, entry: Logged) -> None:
        with self._lock:
            self.requests.append(entry)


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args) -> None:  # quiet
            pass

        # -- plumbing
        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                  head: bool = False) -> None:
            # Log first: once the client has the reply, the log must show it.
            hub._log(Logged(self.command, self._path, self.headers.get("Range"), status))
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _json(self, status: int, obj, headers: dict[str, str] | None = None, head: bool = False) -> None:
            h = {"Content-Type": "application/json", **(headers or {})}
            self._send(status, json.dumps(obj).encode(), h, head)

        def _error(self, code: str, message: str, headers: dict[str, str] | None = None,
                   head: bool = False) -> None:
            self._json(404, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message,
                                                 **(headers or {})}, head)

        @property
        def _path(self) -> str:
            return unquote(urlsplit(self.path).path)

        def do_GET(self) -> None:
            self._route(head=False)

        def do_HEAD(self) -> None:
            self._route(head=True)

        # -- uploads
        def _token(self) -> str | None:
            auth = self.headers.get("Authorization") or ""
            token = auth[7:] if auth.startswith("Bearer ") else None
            return token if token in hub.tokens else None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            info = re.match(r"^/api/(models|datasets|spaces)/(.+)/paths-info/([^/]+)$", path)
            if info:
                return self._paths_info(info[1], unquote(info[2]), unquote(info[3]), body)
            token = self._token()
            if token is None:
                return self._json(401, {"error": "Invalid credentials in Authorization header"})
            if path == "/api/repos/create":
                data = json.loads(body or b"{}")
                t = (data.get("type") or "model") + "s"
                repo_id = "/".join(p for p in (data.get("organization"), data["name"]) if p)
                if (t, repo_id) in hub.repos:
                    return self._json(409, {"error": "You already created this repo", "url": f"{hub.url}/{repo_id}"})
                with hub._lock:
                    hub.repos[(t, repo_id)] = Repo(repo_id, t[:-1])
                    hub.private[repo_id] = data.get("visibility") == "private" or bool(data.get("private"))
                return self._json(200, {"url": f"{hub.url}/{t}/{repo_id}", "name": repo_id})
            m = re.match(r"^/api/(models|datasets|spaces)/(.+)/(preupload|commit)/([^/]+)$", path)
            if not m:
                return self._json(404, {"error": "no such route"})
            t, repo_id, action, rev = m[1], unquote(m[2]), m[3], unquote(m[4])
            repo = hub.repos.get((t, repo_id))
            if repo is None:
                return self._error("RepoNotFound", "Repository not found")
            if action == "preupload":
                files = json.loads(body or b"{}").get("files") or []
                return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                  for f in files]})
            import base64

            sha = repo.resolve(rev)
            tree = dict(repo.commits[sha]) if sha else {}
            message, paths = "", []
            for line in body.splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                value = item.get("value") or {}
                if item.get("key") == "header":
                    message = value.get("summary", "")
                elif item.get("key") == "file":
                    tree[value["path"]] = Blob(base64.b64decode(value["content"]), False)
                    paths.append(value["path"])
                elif item.get("key") == "deletedFile":
                    tree.pop(value["path"], None)
            new = hub.publish(repo_id, {p: b.data for p, b in tree.items()}, repo_type=repo.repo_type,
                              branch=rev if not sha or rev in repo.refs else "main")
            with hub._lock:
                hub.commits.append({"repo": repo_id, "type": t, "message": message, "paths": paths, "token": token})
            return self._json(200, {"commitUrl": f"{hub.url}/{t}/{repo_id}/commit/{new}", "commitOid": new,
                                    "pullRequestUrl": None})

        def _paths_info(self, t: str, repo_id: str, rev: str, body: bytes) -> None:
            repo = hub.repos.get((t, repo_id))
            if repo is None:
                return self._error("RepoNotFound", "Repository not found")
            sha = repo.resolve(rev)
            if sha is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {rev}")
            form = parse_qs(body.decode("utf-8"))
            wanted = [p.strip("/") for p in form.get("paths", [])]
            entries = {e["path"]: e for e in _tree_entries(repo.commits[sha], "", recursive=True)}
            self._json(200, [entries[p] for p in wanted if p in entries])

        def _route(self, head: bool) -> None:
            parts = urlsplit(self.path)
            raw = parts.path
            if raw == "/api/whoami-v2":
                if self._token() is None:
                    return self._json(401, {"error": "Invalid credentials in Authorization header"}, head=head)
                return self._json(200, {"type": "user", "name": hub.user, "fullname": hub.user}, head=head)
            m = _API.match(raw)
            if m:
                return self._api(m["t"], m["rest"], parse_qs(parts.query), head)
            if "/resolve/" in raw:
                return self._resolve(raw, head)
            self._json(404, {"error": "no such route"}, head=head)

        def _repo(self, t: str, repo_id: str, head: bool) -> Repo | None:
            repo = hub.repos.get((t, unquote(repo_id)))
            if repo is None:
                self._error("RepoNotFound", "Repository not found", head=head)
            return repo

        # -- /api
        def _api(self, t: str, rest: str, query: dict, head: bool) -> None:
            for kind in ("revision", "tree"):
                marker = f"/{kind}/"
                if marker in rest:
                    repo_id, tail = rest.split(marker, 1)
                    rev, _, sub = tail.partition("/")
                    return getattr(self, "_" + kind)(t, repo_id, unquote(rev), unquote(sub), query, head)
            return self._revision(t, rest, "main", "", query, head)

        def _revision(self, t, repo_id, rev, _sub, _query, head) -> None:
            repo = self._repo(t, repo_id, head)
            if repo is None:
                return
            sha = repo.resolve(rev)
            if sha is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {rev}", head=head)
            siblings = [{"rfilename": p} for p in repo.commits[sha]]
            self._json(200, {"id": repo.repo_id, "_id": repo.repo_id, "sha": sha, "private": False,
                             "gated": False, "disabled": False, "siblings": siblings, "tags": []}, head=head)

        def _tree(self, t, repo_id, rev, sub, query, head) -> None:
            repo = self._repo(t, repo_id, head)
            if repo is None:
                return
            sha = repo.resolve(rev)
            if sha is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {rev}", head=head)
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            entries = _tree_entries(repo.commits[sha], sub.strip("/"), recursive)
            if sub and not entries:
                return self._error("EntryNotFound", f"{sub} does not exist", head=head)
            start = int(query.get("cursor", ["0"])[0])
            page = entries[start:start + hub.page_size]
            headers = {}
            if start + hub.page_size < len(entries):
                q = f"recursive={str(recursive).lower()}&cursor={start + hub.page_size}"
                headers["Link"] = f'<{hub.url}{urlsplit(self.path).path}?{q}>; rel="next"'
            self._json(200, page, headers, head)

        # -- /resolve
        def _resolve(self, raw: str, head: bool) -> None:
            prefix, tail = raw.split("/resolve/", 1)
            prefix = prefix.lstrip("/")
            t, _, repo_id = prefix.partition("/")
            if t not in TYPES:
                t, repo_id = "models", prefix
            repo = self._repo(t, repo_id, head)
            if repo is None:
                return
            rev, _, path = tail.partition("/")
            rev, path = unquote(rev), unquote(path)
            sha = repo.resolve(rev)
            if sha is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {rev}", head=head)
            blob = repo.commits[sha].get(path)
            if blob is None:
                return self._error("EntryNotFound", f"{path} does not exist", {"X-Repo-Commit": sha}, head)
            headers = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            if blob.lfs:
                headers.update({"ETag": f'"{blob.sha256}"', "X-Linked-Etag": f'"{blob.sha256}"',
                                "X-Linked-Size": str(len(blob.data))})
            else:
                headers["ETag"] = f'"{blob.git_oid}"'
            if head:
                return self._send(200, blob.data, headers, head=True)
            status, drop = hub._take_fault(path)
            if status is not None:
                ra = hub._retry_after.get(path)
                return self._json(status, {"error": "scripted failure"}, {"Retry-After": ra} if ra else None, head=False)
            data, code = blob.data, 200
            if data and hub._take_corrupt(path):
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            rng = self.headers.get("Range")
            if_range = self.headers.get("If-Range")
            if rng and if_range is not None and if_range != headers["ETag"]:
                rng = None  # the client's partial copy is of another version: send it all
            if rng:
                m = _RANGE.match(rng.strip())
                if not m:
                    return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                a = int(m[1])
                b = int(m[2]) if m[2] else len(data) - 1
                if a >= len(data):
                    return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                b = min(b, len(data) - 1)
                headers["Content-Range"] = f"bytes {a}-{b}/{len(data)}"
                data, code = data[a:b + 1], 206
            if drop is not None and not rng:
                return self._send_dropped(data, headers, drop)
            self._send(code, data, headers)

        def _send_dropped(self, data: bytes, headers: dict[str, str], after: int) -> None:
            hub._log(Logged("GET", self._path, None, 200))
            self.send_response(200)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:after])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


def _tree_entries(tree: dict[str, Blob], sub: str, recursive: bool) -> list[dict]:
    """Entries under ``sub`` (all depths if ``recursive``), folders included,
    sorted by path as the Hub lists them."""
    base = sub + "/" if sub else ""
    files, folders = [], set()
    for path, blob in tree.items():
        if not path.startswith(base):
            continue
        rest = path[len(base):]
        parts = rest.split("/")
        if not recursive and len(parts) > 1:
            folders.add(base + parts[0])
            continue
        for i in range(1, len(parts)):
            folders.add(base + "/".join(parts[:i]))
        entry = {"type": "file", "oid": blob.git_oid, "size": len(blob.data), "path": path}
        if blob.lfs:
            entry["lfs"] = {"oid": blob.sha256, "size": len(blob.data), "pointerSize": len(blob.pointer)}
        files.append(entry)
    dirs = [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
            for d in folders]
    return sorted(files + dirs, key=lambda e: e["path"])


__all__ = ["FakeHub", "Logged", "Blob", "Repo"]
