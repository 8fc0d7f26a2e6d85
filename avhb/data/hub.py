"""Verified, resumable snapshots of Hub repositories for ``avhb prepare``.

A dataset lives in ``<data_dir>/<repo_id with "/" -> "__">/<revision>``.  The
folder counts as complete only when it holds the marker file
``.avhb-complete.json``, written after every file of the snapshot was checked
against the Hub's own checksums:

- an LFS file must have the LFS size and SHA-256 the tree listing gives;
- any other file must have the listed size and git blob id, where the blob id
  is ``sha1(b"blob <size>\\0" + content)``.

The marker records the repo, the requested revision, the commit it resolved
to, the ``allow_patterns`` and, per file, its size and SHA-256.  A folder
without a marker, or whose files no longer match it, is repaired: bad files
are deleted and fetched again; good ones are kept.  Within one transfer
``huggingface_hub`` resumes a dropped connection with an HTTP Range request;
across runs, files already fetched and verified are not fetched again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from avhb.atomic import write_atomic
from avhb.errors import UserError
from avhb.model.resilience import Failure, Resilient, RetryPolicy
from avhb.paths import data_dir, hf_hub_cache

MARKER = ".avhb-complete.json"
MARKER_FORMAT = 1
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """One file of a commit as the Hub lists it."""

    path: str
    size: int  # bytes of the real content (the LFS size for LFS files)
    blob_id: str  # git blob sha1 (of the pointer file for LFS files)
    lfs_sha256: str | None = None  # SHA-256 of the content, LFS files only


@dataclass(frozen=True)
class LocalFile:
    """One verified file as recorded in the completion marker."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Digest:
    size: int
    sha256: str
    git_sha1: str


# ---------------------------------------------------------------- locations


def default_data_dir() -> Path:
    """:func:`avhb.paths.data_dir`."""
    return data_dir()


def dataset_dir(repo_id: str, revision: str, data_dir: Path | None = None) -> Path:
    """``<data_dir>/<repo_id with / replaced by __>/<revision>`` (a ``/`` in
    the revision, as in ``refs/convert/parquet``, also becomes ``__``)."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    return root / repo_id.replace("/", "__") / revision.replace("/", "__")


# ------------------------------------------------------------------ digests


def digest(path: Path) -> Digest:
    """Size, SHA-256 and git blob sha1 of a file, in one read."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1()
    sha1.update(b"blob %d\0" % size)
    read = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha256.update(chunk)
            sha1.update(chunk)
            read += len(chunk)
    if read != size:  # the file changed while we read it
        return Digest(read, sha256.hexdigest(), "")
    return Digest(size, sha256.hexdigest(), sha1.hexdigest())


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def mismatch(local_dir: Path, remote: RemoteFile, digests: dict | None = None) -> str | None:
    """Why the local copy of ``remote`` is not trustworthy, or None if it is.

    ``digests`` memoises :func:`digest` by (path, size, mtime) within a call.
    """
    path = _inside(local_dir, remote.path)
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    if not path.is_file():
        return "not a regular file"
    if st.st_size != remote.size:
        return f"size {st.st_size} != {remote.size}"
    key = (str(path), st.st_size, st.st_mtime_ns)
    d = digests.get(key) if digests is not None else None
    if d is None:
        d = digest(path)
        if digests is not None:
            digests[key] = d
    if remote.lfs_sha256 is not None:
        if d.sha256 != remote.lfs_sha256:
            return f"sha256 {d.sha256} != {remote.lfs_sha256}"
    elif d.git_sha1 != remote.blob_id:
        return f"git blob id {d.git_sha1 or '?'} != {remote.blob_id}"
    return None


def _inside(local_dir: Path, rel: str) -> Path:
    path = (local_dir / rel).resolve()
    if not path.is_relative_to(local_dir.resolve()):
        raise UserError(f"refusing repo path {rel!r}: it points outside {local_dir}")
    return path


# ------------------------------------------------------------------- marker


def read_marker(local_dir: Path) -> dict | None:
    """The parsed completion marker, or None if absent or unreadable."""
    try:
        data = json.loads((Path(local_dir) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != MARKER_FORMAT:
        return None
    if not isinstance(data.get("files"), list):
        return None
    return data


def _norm_patterns(patterns: Iterable[str] | str | None) -> list[str] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    return sorted(set(patterns))


def _write_marker(local_dir: Path, *, repo_id: str, repo_type: str, revision: str, commit: str,
                  allow_patterns: list[str] | None, endpoint: str, files: list[LocalFile]) -> None:
    data = {
        "format": MARKER_FORMAT,
        "repo_id": repo_id,
        "repo_type": repo_type,
        "revision": revision,
        "commit": commit,
        "allow_patterns": allow_patterns,
        "endpoint": endpoint,
        "completed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "total_bytes": sum(f.size for f in files),
        "files": [asdict(f) for f in sorted(files, key=lambda f: f.path)],
    }
    write_atomic(Path(local_dir) / MARKER, lambda f: json.dump(data, f, indent=1))


def _marker_matches(marker: dict | None, repo_id: str, revision: str, repo_type: str | None = None,
                    allow_patterns: object = ...) -> bool:
    if marker is None or marker.get("repo_id") != repo_id:
        return False
    if revision not in (marker.get("revision"), marker.get("commit")):
        return False
    if repo_type is not None and marker.get("repo_type") != repo_type:
        return False
    if allow_patterns is not ... and marker.get("allow_patterns") != _norm_patterns(allow_patterns):  # type: ignore[arg-type]
        return False
    return True


def _marker_files_ok(local_dir: Path, marker: dict, verify_hashes: bool) -> bool:
    for entry in marker["files"]:
        try:
            path = _inside(local_dir, entry["path"])
            if not path.is_file() or path.stat().st_size != entry["size"]:
                return False
            if verify_hashes and sha256_file(path) != entry["sha256"]:
                return False
        except (OSError, KeyError, TypeError, UserError):
            return False
    return True


def is_complete(local_dir: Path, repo_id: str, revision: str, *, verify_hashes: bool = False,
                allow_patterns: object = ...) -> bool:
    """True when ``local_dir`` holds a finished snapshot of ``repo_id`` at
    ``revision`` (the requested name or the commit it resolved to): the marker
    is there and every file it lists exists with its recorded size, and, with
    ``verify_hashes``, its recorded SHA-256.  If ``allow_patterns`` is given
    (None meaning "all files") it must equal the patterns of the snapshot.
    Makes no network call."""
    local_dir = Path(local_dir)
    marker = read_marker(local_dir)
    if not _marker_matches(marker, repo_id, revision, allow_patterns=allow_patterns):
        return False
    return _marker_files_ok(local_dir, marker, verify_hashes)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the Hub


def _endpoint(endpoint: str | None) -> str:
    from huggingface_hub import constants

    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _offline() -> bool:
    from huggingface_hub import constants

    env = any(os.environ.get(k, "").upper() in ("1", "ON", "YES", "TRUE")
              for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return env or constants.is_offline_mode()


def _how_to_get(repo_id: str, revision: str, local_dir: Path) -> str:
    return (f"to get the data, run `avhb prepare` where the Hub is reachable (log in with "
            f"`hf auth login` or set HF_TOKEN if {repo_id} is gated or private) and copy "
            f"{local_dir} to this machine, or point AVHB_DATA_DIR at a folder that holds it")


def _hub_error(exc: BaseException, repo_id: str, revision: str, repo_type: str,
               endpoint: str, local_dir: Path) -> UserError:
    """One-line UserError for a failed Hub call."""
    from huggingface_hub import errors as hfe

    what = f"{repo_type} {repo_id!r} at revision {revision!r} on {endpoint}"
    how = _how_to_get(repo_id, revision, local_dir)
    if isinstance(exc, hfe.GatedRepoError):
        msg = f"{what} is gated: accept its terms on the Hub with your account, then log in; {how}"
    elif isinstance(exc, hfe.RevisionNotFoundError):
        msg = f"revision {revision!r} of {repo_type} {repo_id!r} does not exist on {endpoint}; check the task's pinned revision; {how}"
    elif isinstance(exc, hfe.RepositoryNotFoundError):
        msg = f"{repo_type} {repo_id!r} was not found on {endpoint} (wrong id, or private/gated without a token); {how}"
    elif isinstance(exc, hfe.RemoteEntryNotFoundError):
        msg = f"a file listed for {what} is missing on the server; {how}"
    elif isinstance(exc, hfe.HFValidationError):
        msg = f"invalid repo id or revision for {what}: {exc}"
    else:
        detail = " ".join(str(exc).split())[:300] or type(exc).__name__
        msg = f"could not fetch {what}: {type(exc).__name__}: {detail}; rerun `avhb prepare` to resume (verified files are kept); {how}"
    return UserError(msg)


def _is_fatal(exc: BaseException) -> bool:
    from huggingface_hub import errors as hfe

    return isinstance(exc, (hfe.RepositoryNotFoundError, hfe.RevisionNotFoundError,
                            hfe.RemoteEntryNotFoundError, hfe.HFValidationError))


def _remote_files(api, repo_id: str, commit: str, repo_type: str,
                  allow_patterns: list[str] | None) -> list[RemoteFile]:
    from huggingface_hub.hf_api import RepoFile
    from huggingface_hub.utils import filter_repo_objects

    listed = {}
    for entry in api.list_repo_tree(repo_id, recursive=True, revision=commit, repo_type=repo_type):
        if isinstance(entry, RepoFile):
            lfs = entry.lfs
            listed[entry.path] = RemoteFile(
                path=entry.path,
                size=lfs.size if lfs is not None else entry.size,
                blob_id=entry.blob_id,
                lfs_sha256=lfs.sha256 if lfs is not None else None,
            )
    keep = filter_repo_objects(items=sorted(listed), allow_patterns=allow_patterns)
    return [listed[p] for p in keep]


def _verify(local_dir: Path, remote: list[RemoteFile], digests: dict) -> tuple[list[LocalFile], dict[str, str]]:
    good: list[LocalFile] = []
    bad: dict[str, str] = {}
    for rf in remote:
        reason = mismatch(local_dir, rf, digests)
        if reason is None:
            path = _inside(local_dir, rf.path)
            st = path.stat()
            d = digests[(str(path), st.st_size, st.st_mtime_ns)]
            good.append(LocalFile(rf.path, d.size, d.sha256))
        else:
            bad[rf.path] = reason
    return good, bad


def _local_snapshot_ok(local_dir: Path, repo_id: str, revision: str, repo_type: str,
                       patterns: list[str] | None) -> bool:
    marker = read_marker(local_dir)
    return (_marker_matches(marker, repo_id, revision, repo_type, patterns)
            and _marker_files_ok(local_dir, marker, verify_hashes=True))  # type: ignore[arg-type]


def snapshot(repo_id: str, revision: str, allow_patterns: list[str] | None, local_dir: Path,
             repo_type: str = "dataset", *, endpoint: str | None = None,
             token: str | bool | None = None, attempts: int = 3, retry_wait: float = 1.0,
             max_workers: int = 4) -> Path:
    """Fetch ``repo_id`` at ``revision`` (files matching ``allow_patterns``,
    all if None) into ``local_dir``, verify every file, and write the marker.

    Returns ``local_dir``.  Already verified files are not fetched again; bad
    or partial files are deleted and fetched again, up to ``attempts`` rounds,
    retried as model calls are (:class:`avhb.model.resilience.Resilient`,
    ``RetryPolicy(max_attempts=attempts, base_delay=retry_wait)``: a
    full-jitter backoff between rounds; a refused or missing repo is not
    retried).  ``endpoint``
    defaults to ``$HF_ENDPOINT`` read now.  Raises :class:`UserError` with a
    one-line message (what failed and how to get the data) on any failure.
    """
    if not revision:
        raise UserError(f"no revision given for {repo_id!r}: pin a branch, tag or commit")
    local_dir = Path(local_dir).expanduser()
    patterns = _norm_patterns(allow_patterns)
    url = _endpoint(endpoint)

    # A finished snapshot of a pinned commit needs no network.
    if (_COMMIT_RE.match(revision) or _offline()) and _local_snapshot_ok(
            local_dir, repo_id, revision, repo_type, patterns):
        return local_dir
    if _offline():
        raise UserError(
            f"{repo_type} {repo_id!r} at {revision!r} is not complete in {local_dir} and HF_HUB_OFFLINE "
            f"(or TRANSFORMERS_OFFLINE) is set: unset it to let `avhb prepare` download; "
            + _how_to_get(repo_id, revision, local_dir))

    from huggingface_hub import HfApi, snapshot_download

    api = HfApi(endpoint=url, token=token)
    try:
        info = api.repo_info(repo_id, revision=revision, repo_type=repo_type)
        commit = info.sha
        if not commit:
            raise UserError(f"{url} returned no commit for {repo_id!r} at {revision!r}")
        marker = read_marker(local_dir)
        if (marker is not None and marker.get("commit") == commit
                and _local_snapshot_ok(local_dir, repo_id, revision, repo_type, patterns)):
            return local_dir
        remote = _remote_files(api, repo_id, commit, repo_type, patterns)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one line
        if _is_fatal(exc) or isinstance(exc, OSError) or _is_http_error(exc):
            raise _hub_error(exc, repo_id, revision, repo_type, url, local_dir) from exc
        raise
    if not remote:
        raise UserError(f"no file of {repo_type} {repo_id!r} at {revision!r} matches "
                        f"allow_patterns={patterns}; fix the task's patterns")
    for rf in remote:
        _inside(local_dir, rf.path)

    local_dir.mkdir(parents=True, exist_ok=True)
    digests: dict = {}

    def attempt() -> Path:
        """One round: what is missing or bad is fetched, then every file verified."""
        good, bad = _verify(local_dir, remote, digests)
        if bad:
            (local_dir / MARKER).unlink(missing_ok=True)
            for rel, reason in bad.items():
                if reason != "missing":
                    _inside(local_dir, rel).unlink(missing_ok=True)
            snapshot_download(repo_id, repo_type=repo_type, revision=commit, local_dir=str(local_dir),
                              cache_dir=str(hf_hub_cache()), allow_patterns=patterns, endpoint=url,
                              token=token, max_workers=max_workers)
            good, bad = _verify(local_dir, remote, digests)
            if bad:
                raise _Unverified(bad)
        _write_marker(local_dir, repo_id=repo_id, repo_type=repo_type, revision=revision,
                      commit=commit, allow_patterns=patterns, endpoint=url, files=good)
        return local_dir

    policy = RetryPolicy(max_attempts=max(1, attempts), base_delay=retry_wait)
    outcome = Resilient(policy, classify=_classify_fetch).call_sync(attempt)
    if outcome.ok:
        return local_dir
    failure = outcome.exception
    if isinstance(failure, _Unverified):
        sample = "; ".join(f"{p}: {r}" for p, r in sorted(failure.bad.items())[:3])
        raise UserError(
            f"{len(failure.bad)} file(s) of {repo_type} {repo_id!r} at {revision!r} failed verification after "
            f"{outcome.attempts} attempt(s) ({sample}); rerun `avhb prepare`; " + _how_to_get(repo_id, revision, local_dir))
    if failure is not None and (_is_fatal(failure) or isinstance(failure, OSError) or _is_http_error(failure)):
        raise _hub_error(failure, repo_id, revision, repo_type, url, local_dir) from failure
    assert failure is not None
    raise failure  # not a Hub failure (a bug): as it was raised


class _Unverified(Exception):
    """Files still missing or wrong after a round of fetching."""

    def __init__(self, bad: dict[str, str]):
        super().__init__(f"{len(bad)} file(s) failed verification")
        self.bad = bad


def _classify_fetch(exc: BaseException) -> Failure:
    """A round of :func:`snapshot`: a refused or missing repo is fatal;
    transport errors and files that failed verification are retried."""
    message = f"{type(exc).__name__}: {exc}"
    if _is_fatal(exc):
        return Failure(message, False)
    return Failure(message, isinstance(exc, (_Unverified, OSError)) or _is_http_error(exc))


def _is_http_error(exc: BaseException) -> bool:
    """Transport errors of the HTTP client huggingface_hub uses."""
    mod = type(exc).__module__.split(".")[0]
    return mod in ("httpx2", "httpx", "httpcore", "h11")
