"""Issue 25, item 3: one atomic write (``avhb.atomic.write_atomic``) for
every file avhb, its packs and its backends write whole, and what it
promises: the old file or the new one, never half, and no temp file left."""
from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from avhb.atomic import write_atomic
from avhb.errors import EnvironmentFailure

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("avhb", "tasks", "plugins", "model_backends")
# A rename into place that is not a file written through a temp file: a resumable download's
# verified ``.part`` (its bytes arrive over several attempts, even several runs), yt-dlp's finished
# file moved to its name, and a folder assembled whole and installed (a model's; lmms-eval's media
# unpacked from the dataset's archives into ``<folder>.avhb-partial`` first).
NOT_A_WRITE = {("avhb/data/download.py", "os.replace(part, dest)"),
               ("avhb/data/lmms_media.py", "os.replace(into, spec.folder)"),
               ("tasks/curve/prepare.py", "os.replace(got, dest)"),
               ("model_backends/offline_models.py", "os.replace(tmp, target)")}
_RENAME = re.compile(r"os\.replace\(|os\.rename\(|\.rename\(|\.replace\((?:path|dest|target|out)\b|"
                     r"NamedTemporaryFile|mkstemp\(")


def _renames() -> list[str]:
    found = []
    for top in SHIPPED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == "avhb/atomic.py" or "/build/" in rel:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                code = line.split("#", 1)[0].strip()
                if _RENAME.search(code) and not any(rel == f and s in code for f, s in NOT_A_WRITE):
                    found.append(f"{rel}: {code}")
    return found


def test_every_whole_file_write_goes_through_write_atomic():
    """Before issue 25: 14 hand-rolled temp-file-and-rename writes beside
    run/folder's write_atomic; now 0 (the one is avhb/atomic.py)."""
    assert _renames() == []


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "sub" / "results.json"
    write_atomic(path, lambda fh: fh.write("old"))

    def half(fh):
        fh.write("new, half wri")
        raise ValueError("the writer failed")

    with pytest.raises(ValueError):
        write_atomic(path, half)
    assert path.read_text() == "old" and sorted(p.name for p in path.parent.iterdir()) == ["results.json"]
    write_atomic(path, lambda fh: fh.write(b"\x00\x01"), binary=True, durable=False)
    assert path.read_bytes() == b"\x00\x01"


def test_an_os_error_is_one_line_with_its_hint(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(EnvironmentFailure) as err:
        write_atomic(tmp_path / "file" / "below.json", lambda fh: fh.write("{}"), hint="re-run to resume")
    assert str(err.value).startswith(f"cannot write {tmp_path / 'file' / 'below.json'}: ")
    assert str(err.value).endswith("; re-run to resume") and "\n" not in str(err.value)


def test_threads_writing_one_file_never_share_a_temp_file(tmp_path):
    path = tmp_path / "entry.json"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for _ in range(50):
                write_atomic(path, lambda fh: fh.write(str(n) * 1000), durable=False)
        except BaseException as exc:  # a shared temp file would be renamed away under another thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    text = path.read_text()
    assert len(text) == 1000 and len(set(text)) == 1  # one writer's whole content
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]


def test_the_public_write_atomic_is_the_shared_one_without_the_run_folders_hint(tmp_path):
    """Packs write caches and prepared data with ``avhb.write_atomic``: a
    failed write says what failed, not that a run's finished work is kept."""
    import avhb
    import avhb.atomic
    from avhb.errors import EnvironmentFailure

    assert avhb.write_atomic is avhb.atomic.write_atomic
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(EnvironmentFailure) as failed:
        avhb.write_atomic(tmp_path / "a-file" / "grid.png", lambda fh: fh.write(b"png"), binary=True, durable=False)
    assert "grid.png" in str(failed.value) and "resume" not in str(failed.value)
