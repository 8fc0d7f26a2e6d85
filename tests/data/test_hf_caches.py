"""Data a researcher already has: a Hub dataset in the Hugging Face hub
cache (as ``snapshot_download`` / ``hf download`` leave it) or in
``datasets``' Arrow cache (as ``load_dataset`` leaves it) is read offline,
recorded in run.json (kind, commit), kept through resume and ``avhb
score``; a partial snapshot is never used silently.  The caches are
filled by huggingface_hub and datasets themselves, from the suite's local
Hub."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.servers.hub_server import FakeHub

REPO = "org/qa"
ROWS = [{"q": f"capital of c{i}", "a": f"city{i}"} for i in range(6)]
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def _parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def repo_files(rows: list[dict] = ROWS) -> dict[str, bytes]:
    """The repo as the Hub lays out a parquet dataset: a README naming the
    config's splits, the test split in two shards."""
    readme = textwrap.dedent("""\
        ---
        configs:
        - config_name: main
          data_files:
          - split: test
            path: main/test-*
          - split: train
            path: main/train-*
        ---
        # qa
        """).encode()
    half = len(rows) // 2
    return {"README.md": readme, "main/test-00000-of-00002.parquet": _parquet(rows[:half]),
            "main/test-00001-of-00002.parquet": _parquet(rows[half:]),
            "main/train-00000-of-00001.parquet": _parquet(rows[:1])}


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    """HF_HOME, avhb's caches and data dir in tmp_path; no HF_HUB_CACHE."""
    for var in ("HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_ENDPOINT", "HF_TOKEN", "AVHB_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    return {"HF_HOME": str(tmp_path / "hf"), "AVHB_CACHE_DIR": str(tmp_path / "avhb-cache"),
            "AVHB_DATA_DIR": str(tmp_path / "avhb-data"), "HF_HUB_DISABLE_TELEMETRY": "1"}


def _online(env: dict[str, str], url: str, code: str) -> None:
    """Run ``code`` in a fresh Python (huggingface_hub and datasets read
    HF_* at import) with the local Hub as the endpoint."""
    full = {**os.environ, **env, "HF_ENDPOINT": url}
    for var in OFFLINE:
        full.pop(var, None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def download(env: dict[str, str], hub: FakeHub, *, revision: str = "main", allow: list[str] | None = None) -> None:
    with hub.serve() as url:
        _online(env, url, f"""
            from huggingface_hub import snapshot_download
            snapshot_download({REPO!r}, repo_type="dataset", revision={revision!r}, allow_patterns={allow!r})
        """)


def _folder(tmp_path: Path, **extra) -> Path:
    folder = tmp_path / "lmtasks"
    folder.mkdir(exist_ok=True)
    config = {"task": "t", "dataset_path": REPO, "dataset_name": "main", "test_split": "test",
              "doc_to_text": "{{q}}", "doc_to_target": "a", "metric_list": [{"metric": "exact_match"}], **extra}
    (folder / "t.yaml").write_text(json.dumps(config))
    return folder


def _run(folder: Path, tmp_path: Path, env: dict[str, str], *extra: str, name: str = "run"):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({r["q"]: (r["a"] if i % 2 == 0 else "no") for i, r in enumerate(ROWS)}))
    out = tmp_path / name
    proc = run_cli("--tasks", "lmtasks/t", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies}", "--output_path", str(out), "--no_report", *extra, env={**env, **OFFLINE})
    return proc, out


def _data(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())["tasks"]["lmtasks/t"]["data"]


def _exact(out: Path) -> float:
    return json.loads((out / "results.json").read_text())["results"]["lmtasks/t"]["exact_match"]


# ------------------------------------------------------------- hub cache


def test_a_snapshot_in_the_hub_cache_is_read_offline_and_recorded(tmp_path, env):
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    download(env, hub)
    folder = _folder(tmp_path)
    proc, out = _run(folder, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    snapshot = Path(env["HF_HOME"]) / "hub" / "datasets--org--qa" / "snapshots" / sha
    assert _data(out) == {"kind": "hub-cache", "root": str(snapshot), "revision": "main", "commit": sha}
    assert _exact(out) == 0.5
    again, _ = _run(folder, tmp_path, env)  # the same command: finished, nothing changed
    assert again.returncode == 0, again.stderr
    scored = run_cli("score", str(out), "--no-report", env={**env, **OFFLINE})
    assert scored.returncode == 0, scored.stderr
    assert _exact(out) == 0.5


def test_a_new_commit_of_the_branch_is_another_data_source(tmp_path, env):
    """Resume after refs/main moved on in the cache: the one-configuration
    rule names the data (old and new commit's snapshot)."""
    hub = FakeHub()
    hub.publish(REPO, repo_files())
    download(env, hub)
    folder = _folder(tmp_path)
    proc, out = _run(folder, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    newer = hub.publish(REPO, repo_files(ROWS[::-1]))
    download(env, hub)
    proc, _ = _run(folder, tmp_path, env)
    assert proc.returncode != 0 and "data" in proc.stderr and newer in proc.stderr, proc.stderr


def test_the_hub_cache_location_follows_hf_hub_cache(tmp_path, env):
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    moved = dict(env, HF_HUB_CACHE=str(tmp_path / "shared-cache"))
    download(moved, hub)
    proc, out = _run(_folder(tmp_path), tmp_path, moved)
    assert proc.returncode == 0, proc.stderr
    assert _data(out)["root"] == str(tmp_path / "shared-cache" / "datasets--org--qa" / "snapshots" / sha)
    proc, _ = _run(_folder(tmp_path), tmp_path, env, name="elsewhere")  # HF_HOME's hub is empty
    assert proc.returncode == 2 and "has no org/qa" in proc.stderr


def test_a_commit_given_as_the_revision_needs_no_ref(tmp_path, env):
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    download(env, hub, revision=sha)  # a commit download writes no refs/main
    assert not (Path(env["HF_HOME"]) / "hub" / "datasets--org--qa" / "refs" / "main").exists()
    proc, out = _run(_folder(tmp_path, revision=sha), tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert _data(out)["kind"] == "hub-cache" and _data(out)["commit"] == sha
    proc, _ = _run(_folder(tmp_path), tmp_path, env, name="main")  # main: the cache cannot say which commit
    assert proc.returncode == 2 and "no refs/main" in proc.stderr, proc.stderr
    proc, _ = _run(_folder(tmp_path, dataset_kwargs={"revision": sha}), tmp_path, env, name="lmms")
    assert proc.returncode == 0, proc.stderr  # lmms-eval's spelling: dataset_kwargs.revision


def test_a_partial_snapshot_is_not_used_and_the_message_names_what_is_missing(tmp_path, env):
    hub = FakeHub()
    hub.publish(REPO, repo_files())
    download(env, hub, allow=["README.md", "main/test-00000-of-00002.parquet"])
    proc, _ = _run(_folder(tmp_path), tmp_path, env)
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert "is partial" in line and "main/test-00001-of-00002.parquet" in line, line
    assert "avhb prepare lmtasks/t" in line and "--data lmtasks=PATH" in line, line


def test_a_missing_split_or_a_lost_blob_is_missing(tmp_path, env):
    """A split of the config with no file (datasets cannot read the folder
    without it), or a file whose blob is gone (a dead link), is missing."""
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    download(env, hub, allow=["README.md", "main/test-*"])
    proc, _ = _run(_folder(tmp_path), tmp_path, env)
    assert proc.returncode == 2 and "main/train-* (split 'train' of config 'main')" in proc.stderr, proc.stderr
    download(env, hub)
    proc, _ = _run(_folder(tmp_path), tmp_path, env, name="whole")
    assert proc.returncode == 0, proc.stderr
    snapshot = Path(env["HF_HOME"]) / "hub" / "datasets--org--qa" / "snapshots" / sha
    (snapshot / "main" / "test-00000-of-00002.parquet").resolve().unlink()  # its blob deleted: a dead link
    proc, _ = _run(_folder(tmp_path), tmp_path, env, name="lost")
    assert proc.returncode == 2 and "lacks main/test-00000-of-00002.parquet" in proc.stderr, proc.stderr
    proc, _ = _run(_folder(tmp_path, test_split="validation"), tmp_path, env, name="nosplit")
    assert proc.returncode == 2 and "split 'validation' (config 'main' has test, train)" in proc.stderr


def test_avhbs_own_snapshot_comes_before_the_hub_cache(tmp_path, env):
    """avhb's prepared snapshot is read first; ``avhb prepare`` fetches
    nothing for a task the hub cache already holds."""
    hub = FakeHub()
    hub.publish(REPO, repo_files())
    folder = _folder(tmp_path)
    with hub.serve() as url:
        proc = run_cli("prepare", "lmtasks/t", "--include_path", str(folder), env={**env, "HF_ENDPOINT": url},
                       unset=tuple(OFFLINE))
    assert proc.returncode == 0, proc.stderr
    download(env, hub)
    proc, out = _run(folder, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert _data(out)["kind"] == "hub"
    shutil.rmtree(Path(env["AVHB_DATA_DIR"]))
    with hub.serve() as url:
        hub.clear_log()
        proc = run_cli("prepare", "lmtasks/t", "--include_path", str(folder), env={**env, "HF_ENDPOINT": url},
                       unset=tuple(OFFLINE))
        assert proc.returncode == 0 and "is in the hub cache" in proc.stdout, proc.stderr
        assert hub.downloads() == []


# ------------------------------------------------------------ arrow cache


def test_datasets_own_cache_is_read_offline(tmp_path, env):
    """``load_dataset`` run once online (as lm-eval does), the hub cache
    then emptied: the run reads datasets' Arrow build of the commit."""
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    with hub.serve() as url:
        _online(env, url, f"""
            import datasets
            datasets.load_dataset({REPO!r}, "main")
        """)
    shutil.rmtree(Path(env["HF_HOME"]) / "hub")
    proc, out = _run(_folder(tmp_path), tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    build = Path(env["HF_HOME"]) / "datasets" / "org___qa" / "main" / "0.0.0" / sha
    assert _data(out) == {"kind": "datasets-cache", "root": str(build), "revision": "main", "commit": sha}
    assert _exact(out) == 0.5
    scored = run_cli("score", str(out), "--no-report", env={**env, **OFFLINE})
    assert scored.returncode == 0, scored.stderr
    other = "0" * 40
    proc, _ = _run(_folder(tmp_path, revision=other), tmp_path, env, name="pinned")
    assert proc.returncode == 2 and "not its commit 000000000000" in proc.stderr, proc.stderr
    proc, _ = _run(_folder(tmp_path, test_split="validation"), tmp_path, env, name="nosplit")
    assert proc.returncode == 2 and "without split 'validation'" in proc.stderr, proc.stderr


def test_datasets_cache_location_follows_hf_datasets_cache(tmp_path, env):
    hub = FakeHub()
    sha = hub.publish(REPO, repo_files())
    moved = dict(env, HF_DATASETS_CACHE=str(tmp_path / "arrow"))
    with hub.serve() as url:
        _online(moved, url, f"""
            import datasets
            datasets.load_dataset({REPO!r}, "main")
        """)
    shutil.rmtree(Path(env["HF_HOME"]) / "hub")
    proc, out = _run(_folder(tmp_path), tmp_path, moved)
    assert proc.returncode == 0, proc.stderr
    assert _data(out)["root"] == str(tmp_path / "arrow" / "org___qa" / "main" / "0.0.0" / sha)
