"""`avhb prepare` data fetching against a local Hub on 127.0.0.1.

Every test runs with HF_HUB_OFFLINE unset, HF_HOME in a temp folder, no
token, and a socket guard that refuses (and records) any connection that is
not to 127.0.0.1.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import time
from pathlib import Path

import pytest

from avhb.data import hub
from avhb.errors import UserError
from avhb.data.download import (HubSource, PrepareResult, UrlSource, fetch_http, prepare, run_items,
                          source_from_dict)
try:
    from tests.servers.hub_server import FakeHub
except ModuleNotFoundError:  # pytest without the repo root on sys.path
    from servers.hub_server import FakeHub

REPO = "org/avbench"


def _rand(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


FILES = {
    "README.md": b"# AV bench\n",
    "data/test.json": json.dumps([{"id": i, "q": f"question {i}"} for i in range(50)]).encode(),
    "videos/a.mp4": _rand(300_000, 1),
    "videos/b.mp4": _rand(120_000, 2),
    "audio/c.wav": _rand(50_000, 3),
}
LFS = lambda path, size: path.endswith((".mp4", ".wav", ".bin"))  # noqa: E731


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def offline_safe(tmp_path, monkeypatch):
    """Hub variables point at temp folders, offline mode is off, and nothing
    may connect anywhere but 127.0.0.1."""
    from huggingface_hub import constants

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE",
                "AVHB_DATA_DIR", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    assert not constants.is_offline_mode()

    blocked: list = []
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host != "127.0.0.1":
            blocked.append(address)
            raise ConnectionRefusedError(f"test guard: connection to {address} refused")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield
    assert blocked == [], f"tried to leave 127.0.0.1: {blocked}"


@pytest.fixture
def fake(monkeypatch):
    """A served FakeHub holding REPO (tree pages of 3 entries), HF_ENDPOINT set."""
    h = FakeHub(page_size=3)
    h.sha = h.publish(REPO, FILES, lfs=LFS, tags=("v1.0",))
    with h.serve() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        yield h


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.relative_to(root).as_posix().startswith(".")}


def _downloaded(h: FakeHub) -> list[str]:
    """Repo paths of the file GETs served, in order."""
    return [r.path.split("/resolve/", 1)[1].split("/", 1)[1] for r in h.downloads()]


# --------------------------------------------------------------- locations


def test_default_data_dir_and_dataset_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("AVHB_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert hub.default_data_dir() == Path("~/.cache/avhb/data").expanduser()
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "c"))
    assert hub.default_data_dir() == tmp_path / "c" / "data"  # one cache root
    monkeypatch.setenv("AVHB_DATA_DIR", str(tmp_path / "d"))
    assert hub.default_data_dir() == tmp_path / "d"
    assert hub.dataset_dir("org/name", "v1.0") == tmp_path / "d" / "org__name" / "v1.0"
    assert hub.dataset_dir("org/name", "refs/convert/parquet", tmp_path) == \
        tmp_path / "org__name" / "refs__convert__parquet"


# ---------------------------------------------------------------- snapshot


def test_full_snapshot_is_fetched_verified_and_marked(fake, tmp_path):
    local = hub.dataset_dir(REPO, "main", tmp_path / "data")
    out = hub.snapshot(REPO, "main", None, local)
    assert out == local
    assert _tree(local) == FILES
    assert sorted(_downloaded(fake)) == sorted(FILES)  # each file once
    tree_pages = [r for r in fake.requests if "/tree/" in r.path]
    assert len(tree_pages) >= 2  # the listing was paginated and followed

    marker = json.loads((local / hub.MARKER).read_text())
    assert marker["repo_id"] == REPO and marker["repo_type"] == "dataset"
    assert marker["revision"] == "main" and marker["commit"] == fake.sha
    assert marker["allow_patterns"] is None
    assert marker["files"] == [{"path": p, "size": len(FILES[p]), "sha256": sha256(FILES[p])}
                               for p in sorted(FILES)]
    assert marker["total_bytes"] == sum(len(b) for b in FILES.values())
    assert hub.is_complete(local, REPO, "main")
    assert hub.is_complete(local, REPO, fake.sha, verify_hashes=True)
    assert not hub.is_complete(local, REPO, "v2.0")
    assert not hub.is_complete(local, "org/other", "main")
    assert not hub.is_complete(tmp_path / "nowhere", REPO, "main")


def test_second_call_downloads_nothing(fake, tmp_path):
    local = tmp_path / "d"
    hub.snapshot(REPO, "v1.0", None, local)
    fake.clear_log()
    hub.snapshot(REPO, "v1.0", None, local)
    assert fake.downloads() == []
    assert [r.path for r in fake.requests] == [f"/api/datasets/{REPO}/revision/v1.0"]
    fake.clear_log()
    hub.snapshot(REPO, fake.sha, None, local)  # a pinned commit: no request at all
    assert fake.requests == []


def test_dropped_connection_is_resumed_with_range(fake, tmp_path):
    """huggingface_hub writes in DOWNLOAD_CHUNK_SIZE pieces and, after a drop,
    asks for the rest from the last whole piece: the file must span more
    than one piece for the Range to show."""
    from huggingface_hub import constants

    piece = constants.DOWNLOAD_CHUNK_SIZE
    big = _rand(piece + piece // 2, 11)
    fake.publish("org/big", {"big.bin": big, "small.txt": b"s"}, lfs=LFS)
    fake.drop_once("big.bin", after=piece + 1000)
    fake.drop_once("small.txt", after=0)
    local = tmp_path / "d"
    hub.snapshot("org/big", "main", None, local)
    assert _tree(local) == {"big.bin": big, "small.txt": b"s"}
    gets = [(g.range, g.status) for g in fake.downloads("big.bin")]
    assert gets == [(None, 200), (f"bytes={piece}-", 206)]
    assert [(g.range, g.status) for g in fake.downloads("small.txt")] == [(None, 200), (None, 200)]
    assert hub.is_complete(local, "org/big", "main", verify_hashes=True)


def test_failed_file_is_retried_within_the_call(fake, tmp_path):
    fake.fail_get("videos/b.mp4", status=403, times=1)
    local = tmp_path / "d"
    hub.snapshot(REPO, "main", None, local, retry_wait=0)
    assert _tree(local) == FILES
    assert [g.status for g in fake.downloads("videos/b.mp4")] == [403, 200]


def test_a_file_that_fails_verification_is_fetched_again_by_the_retry_policy(fake, tmp_path):
    """A round whose files arrive but do not verify is a retryable failure of
    the one retry loop (issue 25); with one attempt it is a clear error."""
    fake.corrupt_next("data/test.json", times=1)
    local = tmp_path / "d"
    hub.snapshot(REPO, "main", None, local, retry_wait=0)
    assert _tree(local) == FILES
    assert [g.status for g in fake.downloads("data/test.json")] == [200, 200]
    fake.corrupt_next("data/test.json", times=1)
    with pytest.raises(UserError, match="failed verification after 1 attempt"):
        hub.snapshot(REPO, "main", None, tmp_path / "e", attempts=1)


def test_partial_snapshot_is_not_trusted_and_is_repaired(fake, tmp_path):
    fake.fail_get("videos/b.mp4", status=403, times=1)
    local = tmp_path / "d"
    with pytest.raises(UserError) as err:  # 8 workers: every transfer starts before b fails
        hub.snapshot(REPO, "main", None, local, attempts=1, max_workers=8)
    msg = str(err.value)
    assert "\n" not in msg and "rerun `avhb prepare`" in msg and REPO in msg
    assert not (local / hub.MARKER).exists()
    assert not hub.is_complete(local, REPO, "main")
    assert not (local / "videos/b.mp4").exists()
    kept = set(_tree(local))
    assert kept and all(FILES[p] == (local / p).read_bytes() for p in kept)

    fake.clear_log()
    hub.snapshot(REPO, "main", None, local)
    assert sorted(_downloaded(fake)) == sorted(set(FILES) - kept)  # kept files are not fetched again
    assert _tree(local) == FILES
    assert hub.is_complete(local, REPO, "main", verify_hashes=True)


@pytest.mark.parametrize("path,damage", [
    ("videos/a.mp4", "truncate"),   # LFS file, size check
    ("videos/b.mp4", "alter"),      # LFS file, same size: sha256 check
    ("data/test.json", "alter"),    # regular file, same size: git blob id check
    ("README.md", "delete"),
])
def test_corrupted_local_file_is_detected_and_refetched(fake, tmp_path, path, damage):
    local = tmp_path / "d"
    hub.snapshot(REPO, "main", None, local)
    target = local / path
    st = target.stat()
    if damage == "truncate":
        target.write_bytes(FILES[path][: len(FILES[path]) // 2])
    elif damage == "alter":
        data = bytearray(FILES[path])
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # hide it from mtime checks
    else:
        target.unlink()
    # The cheap check sees size changes; only hashing sees same-size damage.
    assert hub.is_complete(local, REPO, "main") is (damage == "alter")
    assert not hub.is_complete(local, REPO, "main", verify_hashes=True)

    fake.clear_log()
    hub.snapshot(REPO, "main", None, local)
    assert _downloaded(fake) == [path]
    assert _tree(local) == FILES
    assert hub.is_complete(local, REPO, "main", verify_hashes=True)


def test_allow_patterns_are_respected(fake, tmp_path):
    local = tmp_path / "d"
    hub.snapshot(REPO, "main", ["videos/*"], local)
    assert _tree(local) == {p: b for p, b in FILES.items() if p.startswith("videos/")}
    assert sorted(_downloaded(fake)) == ["videos/a.mp4", "videos/b.mp4"]
    marker = hub.read_marker(local)
    assert marker["allow_patterns"] == ["videos/*"]
    assert [f["path"] for f in marker["files"]] == ["videos/a.mp4", "videos/b.mp4"]
    assert hub.is_complete(local, REPO, "main", allow_patterns=["videos/*"])
    assert not hub.is_complete(local, REPO, "main", allow_patterns=None)

    with pytest.raises(UserError, match="matches allow_patterns"):
        hub.snapshot(REPO, "main", ["*.parquet"], tmp_path / "e")


def test_new_commit_on_branch_fetches_only_changed_files(fake, tmp_path):
    local = tmp_path / "d"
    hub.snapshot(REPO, "main", None, local)
    changed = dict(FILES, **{"data/test.json": b"[]", "videos/new.mp4": _rand(10_000, 9)})
    new_sha = fake.publish(REPO, changed, lfs=LFS)
    fake.clear_log()
    hub.snapshot(REPO, "main", None, local)
    assert sorted(_downloaded(fake)) == ["data/test.json", "videos/new.mp4"]
    assert _tree(local) == changed
    assert hub.read_marker(local)["commit"] == new_sha
    assert not hub.is_complete(local, REPO, fake.sha)
    assert hub.is_complete(local, REPO, new_sha, verify_hashes=True)


def test_missing_repo_or_revision_is_a_clear_user_error(fake, tmp_path):
    with pytest.raises(UserError) as err:
        hub.snapshot("org/nope", "main", None, tmp_path / "a")
    msg = str(err.value)
    assert "'org/nope' was not found" in msg and fake.url in msg
    assert "avhb prepare" in msg and "AVHB_DATA_DIR" in msg and "HF_TOKEN" in msg
    assert "\n" not in msg

    with pytest.raises(UserError) as err:
        hub.snapshot(REPO, "v9.9", None, tmp_path / "b")
    msg = str(err.value)
    assert "revision 'v9.9'" in msg and "does not exist" in msg and "avhb prepare" in msg
    assert "\n" not in msg
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_unreachable_endpoint_is_a_user_error(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UserError, match="could not fetch dataset 'org/avbench'.*rerun `avhb prepare`"):
        hub.snapshot(REPO, "main", None, tmp_path / "d", endpoint=f"http://127.0.0.1:{port}")


def test_offline_mode(fake, tmp_path, monkeypatch):
    local = tmp_path / "d"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="HF_HUB_OFFLINE"):
        hub.snapshot(REPO, "main", None, local)
    assert fake.requests == []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.snapshot(REPO, "main", None, local)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fake.clear_log()
    assert hub.snapshot(REPO, "main", None, local) == local  # complete: served from disk
    assert fake.requests == []


# -------------------------------------------------------------- fetch_http

BLOB = _rand(200_000, 7)


@pytest.fixture
def files(fake):
    """A plain file URL on the local server (the resolve endpoint)."""
    fake.publish("org/files", {"curve.json": BLOB}, repo_type="model")
    fake.url_of = f"{fake.url}/org/files/resolve/main/curve.json"
    return fake


def _gets(h: FakeHub) -> list[tuple[str | None, int]]:
    return [(r.range, r.status) for r in h.downloads("curve.json")]


def test_fetch_http_downloads_verifies_and_skips_second_time(files, tmp_path):
    dest = tmp_path / "x" / "curve.json"
    assert fetch_http(files.url_of, dest, sha256(BLOB)) == dest
    assert dest.read_bytes() == BLOB
    assert sorted(p.name for p in dest.parent.iterdir()) == ["curve.json"]  # no .part left
    files.clear_log()
    fetch_http(files.url_of, dest, sha256(BLOB))
    fetch_http(files.url_of, dest)
    assert files.requests == []


def test_fetch_http_resumes_after_a_dropped_connection(files, tmp_path):
    files.drop_once("curve.json", after=70_000)
    dest = tmp_path / "curve.json"
    fetch_http(files.url_of, dest, sha256(BLOB), retry_wait=0)
    assert dest.read_bytes() == BLOB
    assert _gets(files) == [(None, 200), ("bytes=70000-", 206)]


def test_fetch_http_continues_a_part_file_from_an_earlier_run(files, tmp_path):
    dest = tmp_path / "curve.json"
    files.drop_once("curve.json", after=50_000)
    with pytest.raises(UserError, match="rerun"):
        fetch_http(files.url_of, dest, sha256(BLOB), retries=0)
    assert not dest.exists()
    assert (tmp_path / "curve.json.part").stat().st_size == 50_000
    files.clear_log()
    fetch_http(files.url_of, dest, sha256(BLOB))
    assert dest.read_bytes() == BLOB
    assert _gets(files) == [("bytes=50000-", 206)]


def test_fetch_http_restarts_when_the_remote_file_changed(files, tmp_path):
    dest = tmp_path / "curve.json"
    (tmp_path / "curve.json.part").write_bytes(b"old version bytes")
    (tmp_path / "curve.json.part.json").write_text(json.dumps({"validator": '"old-etag"', "total": 999}))
    fetch_http(files.url_of, dest, sha256(BLOB))
    assert dest.read_bytes() == BLOB
    assert _gets(files) == [("bytes=17-", 200)]  # If-Range mismatch: whole file


def test_fetch_http_corrupt_resume_retries_from_zero_then_fails_clearly(files, tmp_path):
    dest = tmp_path / "curve.json"
    part = tmp_path / "curve.json.part"
    part.write_bytes(b"\0" * 1000)  # wrong bytes, no validator: resumes, hash fails, restarts
    fetch_http(files.url_of, dest, sha256(BLOB))
    assert dest.read_bytes() == BLOB
    assert _gets(files) == [("bytes=1000-", 206), (None, 200)]

    with pytest.raises(UserError, match="sha256 mismatch") as err:
        fetch_http(files.url_of, tmp_path / "other.json", "0" * 64)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "other.json").exists() and not (tmp_path / "other.json.part").exists()


def test_a_restart_from_zero_is_not_spent_from_the_retry_budget(files, tmp_path):
    """A resumed part whose hash is wrong restarts from byte 0 within its
    attempt: with no retries left it still downloads (it used to fail with
    "byte ranges do not add up"), and a file that is wrong from byte 0 too
    is said as a sha256 mismatch after the restart."""
    dest = tmp_path / "curve.json"
    (tmp_path / "curve.json.part").write_bytes(b"\0" * 1000)
    fetch_http(files.url_of, dest, sha256(BLOB), retries=0)
    assert dest.read_bytes() == BLOB
    assert _gets(files) == [("bytes=1000-", 206), (None, 200)]
    other = tmp_path / "other.json"
    (tmp_path / "other.json.part").write_bytes(b"\0" * 1000)
    with pytest.raises(UserError, match=r"sha256 mismatch .* \(after a restart from byte 0\)"):
        fetch_http(files.url_of, other, "0" * 64, retries=0)
    assert not other.exists() and not (tmp_path / "other.json.part").exists()


def test_fetch_http_replaces_a_wrong_existing_file(files, tmp_path):
    dest = tmp_path / "curve.json"
    dest.write_bytes(b"stale")
    fetch_http(files.url_of, dest, sha256(BLOB))
    assert dest.read_bytes() == BLOB


def test_fetch_http_errors(files, tmp_path):
    with pytest.raises(UserError, match="HTTP 404"):
        fetch_http(f"{files.url}/org/files/resolve/main/absent.json", tmp_path / "a.json")
    assert len(files.downloads()) == 1  # a 404 is not retried
    files.fail_get("curve.json", status=503, times=2)
    fetch_http(files.url_of, tmp_path / "b.json", retry_wait=0)
    assert [s for _, s in _gets(files)] == [503, 503, 200]
    with pytest.raises(UserError, match="64 hex"):
        fetch_http(files.url_of, tmp_path / "c.json", "abc")


def test_fetch_http_retries_with_the_model_calls_policy_and_honours_retry_after(files, tmp_path):
    """Issue 25: downloads retry through the one loop (avhb.model.resilience.Resilient):
    a 503's Retry-After is waited (not the backoff), a 409 is retryable as for a model call,
    and the attempts are bounded by ``retries``."""
    files.fail_get("curve.json", status=503, times=1, retry_after="0.5")
    files.fail_get("curve.json", status=409, times=1)
    start = time.perf_counter()
    fetch_http(files.url_of, tmp_path / "a.json", retry_wait=0)
    assert time.perf_counter() - start >= 0.5
    assert [s for _, s in _gets(files)] == [503, 409, 200]
    files.clear_log()
    files._retry_after.clear()
    files.fail_get("curve.json", status=503, times=5)
    with pytest.raises(UserError, match="HTTP 503"):
        fetch_http(files.url_of, tmp_path / "b.json", retries=2, retry_wait=0)
    assert [s for _, s in _gets(files)] == [503, 503, 503]


# ----------------------------------------------------------------- prepare


def test_prepare_collects_failures_and_writes_manifest(files, tmp_path):
    sources = [
        HubSource(REPO, "v1.0", ("data/*",)),
        UrlSource(files.url_of, "curve/curve.json", sha256(BLOB)),
        UrlSource(f"{files.url}/org/files/resolve/main/gone.json", "curve/gone.json"),
        HubSource("org/missing", "main"),
    ]
    manifest = tmp_path / "data" / "manifest.json"
    result = prepare(sources, tmp_path / "data", manifest_path=manifest)
    assert result.ok == [sources[0].label, sources[1].label]
    assert [item for item, _ in result.failed] == [sources[2].label, sources[3].label]
    assert "HTTP 404" in result.failed[0][1] and "not found" in result.failed[1][1]
    assert not result.all_ok
    assert _tree(tmp_path / "data" / "org__avbench" / "v1.0") == {"data/test.json": FILES["data/test.json"]}
    assert (tmp_path / "data" / "curve" / "curve.json").read_bytes() == BLOB

    written = json.loads(manifest.read_text())
    assert written["complete"] is False
    assert written["ok"] == result.ok
    assert written["failed"] == [{"item": i, "reason": r} for i, r in result.failed]


def test_run_items_passes_only_expected_errors():
    def boom():
        raise UserError("no\n  data")

    result = run_items([("a", lambda: None), ("b", boom)])
    assert result == PrepareResult(ok=["a"], failed=[("b", "no data")])
    with pytest.raises(ZeroDivisionError):  # a bug is not a "could not fetch"
        run_items([("c", lambda: 1 / 0)])


def test_source_from_dict():
    assert source_from_dict({"hub": "o/n", "revision": "abc", "allow_patterns": "*.json"}) == \
        HubSource("o/n", "abc", ("*.json",))
    assert source_from_dict({"url": "http://127.0.0.1/x", "dest": "c/x.json"}) == \
        UrlSource("http://127.0.0.1/x", "c/x.json")
    for bad, match in [({"hub": "o/n"}, "revision"), ({"url": "u"}, "dest"), ({"x": 1}, "'hub' or 'url'"),
                       ({"hub": "o/n", "revision": "r", "files": []}, "unknown keys"), ("s", "mapping")]:
        with pytest.raises(UserError, match=match):
            source_from_dict(bad)
    with pytest.raises(UserError, match="relative"):
        UrlSource("u", "../x").local_path(Path("/tmp"))
