"""A full disk while any file of the run folder is written (the lock,
run.json, samples/, results.json, report.html, previous/) is one line
naming the file, exit 1, the finished work kept, and the same command
resumes once there is room -- as the journal always did.  On a real full
file system: a tmpfs of a few KiB mounted for the test (root only; the
tests skip elsewhere), grown again with ``remount``.  Where a real disk
cannot reach a path (a hard link needs no room), the error is injected at
the write call."""
from __future__ import annotations

import errno
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from avhb.errors import EnvironmentFailure
from avhb.runfolder.folder import RunFolder
from avhb.score.metric import SampleRecord
from tests.conftest import run_cli

HINT = "the run's finished work is kept, re-run the command to resume"


class Disk:
    def __init__(self, root: Path):
        self.root = root

    def resize(self, size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.root)], check=True, capture_output=True)

    def fill(self) -> None:
        """Take every free byte (a file written until the disk refuses)."""
        with open(self.root / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    def free(self) -> None:
        (self.root / "filler").unlink(missing_ok=True)


@pytest.fixture
def disk(tmp_path):
    root = tmp_path / "disk"
    root.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(root)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}): a real full disk needs root")
    try:
        yield Disk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("avhb: error")]


def _data(tmp_path: Path, n: int) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"id": f"e{i}", "q": f"easy question {i}", "a": f"ans{i}", "kind": "y"} for i in range(n)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _run(out: Path, data: Path, *extra: str):
    return run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--data", f"testpack/qa={data}",
                   "--output-dir", str(out), *extra)


def test_samples_on_a_full_disk_are_one_line_and_the_run_resumes(testpack, tmp_path, disk):
    data = _data(tmp_path, 9000)  # more than a window (8,192): the disk fills while the second is written
    reference = tmp_path / "reference"
    assert _run(reference, data, "--no-report").returncode == 0
    out = disk.root / "run"
    journal = (reference / "journal" / "responses.jsonl").read_bytes()
    disk.resize(f"{(len(journal) // 4096 + 8) * 4}k")  # the journal, run.json twice over, and 16 KiB more
    (out / "journal").mkdir(parents=True)  # the journal answers every call: only the samples file is new
    shutil.copy(reference / "journal" / "responses.jsonl", out / "journal")
    shutil.copy(reference / "run.json", out)
    proc = _run(out, data, "--no-report")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    samples = out / "samples" / "testpack__qa_easy.jsonl"
    assert _errors(proc.stderr) == [f"avhb: error: cannot write {samples}: No space left on device; {HINT}"]
    assert (out / "journal" / "responses.jsonl").read_bytes() == journal  # finished work kept
    assert not samples.exists() and not list((out / "samples").glob(".*.tmp"))
    disk.resize("64m")
    proc = _run(out, data, "--no-report")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "0 model calls" in proc.stderr  # every answer from the journal
    assert samples.read_text() == (reference / "samples" / "testpack__qa_easy.jsonl").read_text()
    assert (json.loads((out / "results.json").read_text())["results"]
            == json.loads((reference / "results.json").read_text())["results"])


def test_the_lock_on_a_full_disk_is_one_line(testpack, tmp_path, disk):
    out = disk.root / "run"
    out.mkdir()
    disk.fill()
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--output-dir", str(out))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert _errors(proc.stderr) == [f"avhb: error: cannot write {out / '.lock'} (the run folder's lock): No space "
                                    f"left on device; {HINT}"]
    disk.free()
    assert run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report",
                   "--output-dir", str(out)).returncode == 0


def test_the_report_on_a_full_disk_is_one_line_and_the_rerun_writes_it(testpack, disk):
    out = disk.root / "run"
    flags = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--output-dir", str(out)]
    disk.resize("40k")  # everything but report.html fits
    proc = run_cli(*flags)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert _errors(proc.stderr) == [f"avhb: error: cannot write {out / 'report.html'}: No space left on device; {HINT}"]
    assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["exact"] == 1.0
    assert not (out / "report.html").exists()
    disk.resize("1m")
    proc = run_cli(*flags)
    assert proc.returncode == 0 and "finished earlier with the same settings; results kept" in proc.stderr
    assert (out / "report.html").stat().st_size > 10_000


def test_a_report_that_fails_otherwise_is_a_warning_and_the_run_stands(testpack, tmp_path, capsys):
    import avhb
    from avhb.model.backend import parse_backend_spec
    from avhb.process import event_loop
    from avhb.run.evaluator import Evaluator

    def broken(root):
        raise RuntimeError("a bug in the report")

    options = avhb.RunOptions(tasks=["testpack/qa_easy"], model=parse_backend_spec("testpack/echo"),
                              output_dir=tmp_path / "run", sample_data=True)
    results = event_loop.run(Evaluator(options, report=broken).run())
    assert results["results"]["testpack/qa_easy"]["exact"] == 1.0
    assert "avhb: warning: report.html not written: a bug in the report" in capsys.readouterr().err


def _records(n: int, size: int) -> list[SampleRecord]:
    return [SampleRecord(id=f"s{i}", doc={"q": "x" * size}, target="a") for i in range(n)]


@pytest.mark.parametrize("size", [10, 300, 1000, 5000])  # short lines leave part of the buffer when the disk fills
def test_a_samples_file_that_fills_the_disk_keeps_the_one_before(disk, size):
    folder = RunFolder(disk.root / "run")
    with folder.samples_file("t") as append:
        append(_records(3, 10))
    before = folder.samples_path("t").read_bytes()
    with pytest.raises(EnvironmentFailure) as failed:
        with folder.samples_file("t") as append:
            for _ in range(10_000):
                append(_records(7, size))
    assert str(failed.value) == f"cannot write {folder.samples_path('t')}: No space left on device; {HINT}"
    assert folder.samples_path("t").read_bytes() == before and not list((disk.root / "run" / "samples").glob(".*"))


def test_results_and_run_json_on_a_full_disk_keep_the_ones_before(disk):
    folder = RunFolder(disk.root / "run")
    folder.write_results({"results": {"t": {"acc": 0.5}}})
    folder.write_run({"tasks": {"t": {}}})
    disk.fill()
    for write, name in ((folder.write_results, "results.json"), (folder.write_run, "run.json")):
        before = (disk.root / "run" / name).read_bytes()
        with pytest.raises(EnvironmentFailure) as failed:
            write({"results": {"t": {"acc": 0.75, "note": "x" * 100_000}}})
        assert str(failed.value) == f"cannot write {disk.root / 'run' / name}: No space left on device; {HINT}"
        assert (disk.root / "run" / name).read_bytes() == before
    assert sorted(p.name for p in (disk.root / "run").iterdir()) == ["results.json", "run.json"]


# ---------------------------------------------------------------- injected where a real disk cannot reach


class _RefusingFile:
    """A text file whose disk is full: every write and flush, and the close (the buffered rest), refuse."""

    def __init__(self, path):
        self.name = str(path)
        open(path, "w").close()

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    flush = write

    def close(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        return -1


def test_a_close_that_fails_after_a_failed_write_does_not_hide_it(tmp_path, monkeypatch):
    import avhb.atomic as atomic

    monkeypatch.setattr(atomic, "open", lambda path, *a, **k: _RefusingFile(path), raising=False)
    folder = RunFolder(tmp_path / "run")
    with pytest.raises(EnvironmentFailure, match=r"cannot write .*samples/t\.jsonl: No space left on device"):
        with folder.samples_file("t") as append:
            append(_records(2, 10))
    assert not list((tmp_path / "run" / "samples").glob(".*.tmp"))


def test_previous_results_on_a_full_disk_are_one_line_and_leave_no_half_folder(tmp_path, monkeypatch):
    from avhb.runfolder import previous

    (tmp_path / "samples").mkdir()
    (tmp_path / "results.json").write_text("{}")
    (tmp_path / "samples" / "t.jsonl").write_text("{}\n")

    def full(src, dst):
        if Path(dst).name == "t.jsonl":
            raise OSError(errno.ENOSPC, "No space left on device")
        shutil.copy2(src, dst)

    monkeypatch.setattr(previous, "_link_or_copy", full)
    with pytest.raises(EnvironmentFailure) as failed:
        previous.keep_previous(tmp_path, {"tasks": {}})
    kept = tmp_path / "previous"
    assert str(failed.value).startswith(f"cannot write {kept}/") and str(failed.value).endswith(
        f"/samples/t.jsonl: No space left on device; {HINT}")
    assert list(kept.iterdir()) == []  # the incomplete previous/<timestamp>/ is removed
    assert (tmp_path / "results.json").read_text() == "{}" and (tmp_path / "samples" / "t.jsonl").read_text() == "{}\n"


def test_a_full_disk_making_the_previous_folder_itself_is_one_line(tmp_path, monkeypatch):
    """The folder previous/<timestamp>/ cannot be made: nothing to remove, the same one line."""
    from avhb.runfolder import previous

    (tmp_path / "results.json").write_text("{}")
    make = Path.mkdir

    def full(self, *args, **kwargs):
        if "previous" in self.parts:
            raise OSError(errno.ENOSPC, "No space left on device")
        return make(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(EnvironmentFailure) as failed:
        previous.keep_previous(tmp_path, {"tasks": {}})
    assert str(failed.value).startswith(f"cannot write {tmp_path / 'previous'}/") and str(failed.value).endswith(
        f"/samples: No space left on device; {HINT}")
    assert not (tmp_path / "previous").exists() and (tmp_path / "results.json").read_text() == "{}"
