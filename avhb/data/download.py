"""``avhb prepare``: fetch a task's data ahead of a run.

Runs on compute nodes read only local files, so everything a task needs is
fetched here, verified, and what could not be fetched is written to a
``manifest.json``.  Two kinds of source:

- :class:`HubSource`: a Hub repo at a pinned revision (see :mod:`avhb.data.hub`);
- :class:`UrlSource`: one file over plain HTTP(S) (e.g. CURVE's JSON),
  fetched by :func:`fetch_http`: resumable through an HTTP Range request on a
  ``<dest>.part`` file, checked against the size the server announced and an
  optional SHA-256, then renamed into place atomically.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable

from avhb.atomic import write_atomic
from avhb.data import hub
from avhb.errors import UserError
from avhb.model.resilience import Failure, Resilient, RetryPolicy, classify_exception

_CHUNK = 1 << 16
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TRANSIENT = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError)


# ------------------------------------------------------------- fetch_http


class _Restart(Exception):
    """The partial file cannot be continued; start from byte 0."""


def fetch_http(url: str, dest: Path, sha256: str | None = None, *, retries: int = 3,
               timeout: float = 60.0, retry_wait: float = 1.0,
               headers: dict[str, str] | None = None) -> Path:
    """Download ``url`` to ``dest`` and return ``dest``.

    - An existing ``dest`` is kept when ``sha256`` is None or matches (no
      request); a mismatching one is fetched again.
    - Bytes go to ``<dest>.part``; after a dropped connection (within this
      call, up to ``retries`` times, or in a later call) the download resumes
      with ``Range: bytes=<part size>-`` and ``If-Range`` set to the validator
      (ETag or Last-Modified) seen when the part was started, so a changed
      file restarts instead of being spliced.  A server that ignores the range
      (200) restarts the file.
    - The result must have the announced total size and, if given, the
      SHA-256; a mismatch after a resumed transfer retries once from byte 0,
      otherwise raises.  Then ``.part`` is fsynced and renamed to ``dest``.
    - Retries are the model calls' policy (:class:`avhb.model.resilience.Resilient`,
      ``RetryPolicy(max_attempts=retries + 1, base_delay=retry_wait)``): a
      retryable HTTP status (408, 409, 425, 429, 5xx; its Retry-After
      honoured) or a transport error is retried after a full-jitter
      backoff.  A restart from byte 0 (a resumed file whose hash is wrong,
      ranges that do not add up) happens within the attempt: it does not
      spend the budget, and a spent budget does not hide it.

    Raises :class:`UserError` (one line) when the file cannot be fetched.
    """
    dest = Path(dest)
    want = sha256.lower() if sha256 else None
    if want is not None and not _SHA256.match(want):
        raise UserError(f"bad sha256 for {url}: {sha256!r} is not 64 hex digits")
    if dest.is_file():
        if want is None or hub.sha256_file(dest) == want:
            return dest
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    meta = dest.with_name(dest.name + ".part.json")

    def restart() -> None:
        part.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)

    def attempt() -> Path:
        """One attempt of the retry budget; a restart from byte 0 is part of
        it (at most twice for ranges that do not add up, once for a resumed
        file whose hash is wrong), so a budget spent on dropped connections
        cannot turn a restart into a wrong message."""
        bad_ranges, rehashed = 0, False
        while True:
            resumed = part.is_file() and part.stat().st_size > 0
            try:
                _transfer(url, part, meta, timeout, headers or {})
            except _Restart as exc:
                restart()
                bad_ranges += 1
                if bad_ranges > 2:
                    raise UserError(f"could not fetch {url}: the server's byte ranges do not add up "
                                    f"({exc or 'inconsistent Content-Range'}); place the file at {dest} by hand") from exc
                continue
            got = hub.sha256_file(part) if want is not None else None
            if got is not None and got != want:
                restart()
                if resumed and not rehashed:  # the part may hold another version's bytes: once from byte 0
                    rehashed = True
                    continue
                raise UserError(f"sha256 mismatch for {url}: expected {want}, got {got}"
                                + (" (after a restart from byte 0)" if rehashed else "")
                                + f"; the file on the server changed or is corrupt (nothing was kept at {dest})")
            with open(part, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(part, dest)
            meta.unlink(missing_ok=True)
            return dest

    policy = RetryPolicy(max_attempts=max(0, retries) + 1, base_delay=retry_wait)
    outcome = Resilient(policy, classify=_classify_transfer).call_sync(attempt)
    if outcome.ok:
        assert outcome.value is not None  # attempt() returns the destination or raises
        return outcome.value
    exc = outcome.exception
    assert exc is not None  # not ok: the last attempt raised
    if isinstance(exc, urllib.error.HTTPError):
        raise UserError(f"could not fetch {url}: HTTP {exc.code} {exc.reason}; "
                        f"check the URL, or place the file at {dest} by hand") from exc
    if isinstance(exc, _TRANSIENT):
        raise UserError(f"could not fetch {url}: {type(exc).__name__}: {exc}; rerun "
                        f"`avhb prepare` to resume, or place the file at {dest} by hand") from exc
    raise exc  # not a transfer failure (a bug): as it was raised


def _classify_transfer(exc: BaseException) -> Failure:
    """A failed transfer attempt: HTTP errors by status (a 429's or 503's
    Retry-After honoured), transport errors retryable, anything else fatal
    (a restart from byte 0 happens within the attempt)."""
    if isinstance(exc, urllib.error.HTTPError):
        return classify_exception(exc)
    if isinstance(exc, _TRANSIENT):
        return Failure(f"{type(exc).__name__}: {exc}", True)
    return Failure(f"{type(exc).__name__}: {exc}", False)


def _transfer(url: str, part: Path, meta: Path, timeout: float, extra: dict[str, str]) -> None:
    """Bring ``part`` to the whole file, continuing it if possible.  Raises on
    transport errors, leaving what arrived in ``part``."""
    have = part.stat().st_size if part.is_file() else 0
    saved = _read_json(meta) if have else {}
    headers = {"Accept-Encoding": "identity", "User-Agent": "avhb-prepare", **extra}
    if have:
        headers["Range"] = f"bytes={have}-"
        if saved.get("validator"):
            headers["If-Range"] = saved["validator"]
    req = urllib.request.Request(url, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:
            total = _total_from(exc.headers.get("Content-Range"))
            exc.close()
            if total is not None and total == have and saved.get("total") == total:
                return  # the part already holds every byte
            raise _Restart() from exc
        raise
    with resp:
        validator = resp.headers.get("ETag") or resp.headers.get("Last-Modified")
        if resp.status == 206:
            m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if not m or int(m[1]) != have:
                raise _Restart()
            total = None if m[3] == "*" else int(m[3])
            mode = "ab"
        else:  # 200: whole file from byte 0
            total = _int(resp.headers.get("Content-Length"))
            mode = "wb"
            have = 0
        if mode == "wb" or not saved:
            _write_json(meta, {"url": url, "validator": validator, "total": total})
        with open(part, mode) as f:
            while chunk := resp.read(_CHUNK):
                f.write(chunk)
                have += len(chunk)
    if total is not None and have != total:
        if have > total:
            raise _Restart()
        raise http.client.IncompleteRead(b"", total - have)


def _total_from(content_range: str | None) -> int | None:
    m = re.match(r"^bytes \*/(\d+)$", content_range or "")
    return int(m[1]) if m else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict) -> None:
    text = json.dumps(data, indent=1)
    write_atomic(path, lambda fh: fh.write(text))


# ---------------------------------------------------------------- sources


@dataclass(frozen=True)
class HubSource:
    """A Hub repo at a pinned revision, fetched to
    ``<data_dir>/<repo_id __>/<revision>``."""

    repo_id: str
    revision: str
    allow_patterns: tuple[str, ...] | None = None
    repo_type: str = "dataset"

    @property
    def label(self) -> str:
        pats = f" [{', '.join(self.allow_patterns)}]" if self.allow_patterns else ""
        return f"hub:{self.repo_id}@{self.revision}{pats}"

    def local_dir(self, data_dir: Path) -> Path:
        return hub.dataset_dir(self.repo_id, self.revision, data_dir)


@dataclass(frozen=True)
class UrlSource:
    """One file over HTTP(S), fetched to ``<data_dir>/<dest>``."""

    url: str
    dest: str  # relative POSIX path under the data dir
    sha256: str | None = None

    @property
    def label(self) -> str:
        return f"url:{self.url}"

    def local_path(self, data_dir: Path) -> Path:
        rel = PurePosixPath(self.dest)
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise UserError(f"prepare dest {self.dest!r} must be a relative path inside the data dir")
        return Path(data_dir, *rel.parts)


Source = HubSource | UrlSource


def source_from_dict(d: dict[str, Any]) -> Source:
    """Parse a YAML entry: ``{hub: org/name, revision: ..., allow_patterns:
    [...], repo_type: dataset}`` or ``{url: ..., dest: ..., sha256: ...}``."""
    if not isinstance(d, dict):
        raise UserError(f"prepare entry must be a mapping, got {d!r}")
    if "hub" in d:
        unknown = set(d) - {"hub", "revision", "allow_patterns", "repo_type"}
        if unknown:
            raise UserError(f"prepare entry for {d['hub']!r}: unknown keys {sorted(unknown)}")
        if not d.get("revision"):
            raise UserError(f"prepare entry for {d['hub']!r} needs a pinned 'revision'")
        pats = d.get("allow_patterns")
        if isinstance(pats, str):
            pats = [pats]
        if pats is not None and not (isinstance(pats, list) and all(isinstance(p, str) for p in pats)):
            raise UserError(f"prepare entry for {d['hub']!r}: allow_patterns must be a list of strings")
        return HubSource(str(d["hub"]), str(d["revision"]), tuple(pats) if pats is not None else None,
                         str(d.get("repo_type", "dataset")))
    if "url" in d:
        unknown = set(d) - {"url", "dest", "sha256"}
        if unknown:
            raise UserError(f"prepare entry for {d['url']!r}: unknown keys {sorted(unknown)}")
        if not d.get("dest"):
            raise UserError(f"prepare entry for {d['url']!r} needs a 'dest' path")
        return UrlSource(str(d["url"]), str(d["dest"]), d.get("sha256"))
    raise UserError(f"prepare entry needs 'hub' or 'url': {d!r}")


# ----------------------------------------------------------------- result


@dataclass
class PrepareResult:
    """What was fetched (``ok``: labels) and what not (``failed``: (label,
    one-line reason))."""

    ok: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def all_ok(self) -> bool:
        return not self.failed

    def merge(self, other: "PrepareResult") -> "PrepareResult":
        return PrepareResult(self.ok + other.ok, self.failed + other.failed)

    def to_json(self) -> dict:
        return {
            "complete": self.all_ok,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "ok": list(self.ok),
            "failed": [{"item": item, "reason": reason} for item, reason in self.failed],
        }

    def write_manifest(self, path: Path) -> Path:
        """Write ``manifest.json`` (atomically) and return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_json(path, self.to_json())
        return path


def run_items(items: Iterable[tuple[str, Callable[[], object]]]) -> PrepareResult:
    """Call each ``(label, fetch)``; a :class:`UserError` or ``OSError``
    marks that item failed with its message and the others still run."""
    result = PrepareResult()
    for label, fetch in items:
        try:
            fetch()
        except (UserError, OSError) as exc:
            result.failed.append((label, " ".join(str(exc).split()) or type(exc).__name__))
        else:
            result.ok.append(label)
    return result


def prepare(sources: Iterable[Source], data_dir: Path | None = None, *,
            manifest_path: Path | None = None, endpoint: str | None = None) -> PrepareResult:
    """Fetch every source into ``data_dir`` (default
    :func:`avhb.data.hub.default_data_dir`); write the manifest if asked."""
    root = Path(data_dir) if data_dir is not None else hub.default_data_dir()

    def job(src: Source) -> Callable[[], object]:
        if isinstance(src, HubSource):
            pats = list(src.allow_patterns) if src.allow_patterns is not None else None
            return lambda: hub.snapshot(src.repo_id, src.revision, pats, src.local_dir(root),
                                        src.repo_type, endpoint=endpoint)
        return lambda: fetch_http(src.url, src.local_path(root), src.sha256)

    result = run_items((src.label, job(src)) for src in sources)
    if manifest_path is not None:
        result.write_manifest(manifest_path)
    return result
