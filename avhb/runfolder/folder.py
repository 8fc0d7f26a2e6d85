"""The run folder written: run.json, samples/<task>.jsonl, results.json
(names and places: :mod:`avhb.runfolder.layout`), and the ``.lock`` of the
process writing it (:mod:`avhb.runfolder.lock`).
Every file but the journal is rewritten atomically (:mod:`avhb.atomic`: temp
file ``.NAME.PID.THREAD.tmp`` + rename), so a crash never leaves a half-written results
file; :meth:`RunFolder.open` takes the lock and then removes the temp files
a killed run left behind.  A folder that cannot be created or written is a
one-line error (``UserError``: the path is a file; ``EnvironmentFailure``:
permissions, a full disk)."""
from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator

from avhb.atomic import atomic_file, write_failure, write_atomic as _write_atomic
from avhb.errors import EnvironmentFailure, UserError
from avhb.runfolder import layout
from avhb.runfolder.lock import LOCK_NAME, LockHolder, RunLock
from avhb.score.metric import SampleRecord
from avhb.redact import redact, redacted_json


RESUME_HINT = "the run's finished work is kept, re-run the command to resume"


def write_atomic(path: Path, write: Callable[[Any], None], *, binary: bool = False) -> None:
    """:func:`avhb.atomic.write_atomic` for a run's files (and pack
    commands'): ``write(fh)`` fills the file; an OS error is an
    ``EnvironmentFailure`` that says the finished work is kept."""
    _write_atomic(path, write, binary=binary, hint=RESUME_HINT)


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, lambda fh: json.dump(redact(data), fh, indent=2, ensure_ascii=False, default=_default))


def _default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__dataclass_fields__"):
        return asdict(obj)
    return str(obj)


class RunFolder:
    def __init__(self, root: Path):
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise UserError(f"--output-dir {self.root}: is a file, not a folder")
        # the folders this process creates (the run folder and missing parents), removed again by
        # close() when the command failed before writing anything into them
        self.created = [p for p in (self.root, *self.root.parents) if not p.exists()]
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise UserError(f"--output-dir {self.root}: a parent of it is a file, not a folder") from None
        except OSError as exc:
            raise EnvironmentFailure(f"--output-dir {self.root}: cannot create it: {exc.strerror or exc}") from None
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise EnvironmentFailure(f"--output-dir {self.root}: not writable by this user")
        self.lock = RunLock(self.root)

    def open(self) -> LockHolder | None:
        """Take the folder's lock (``RunFolderLocked`` when a live process
        holds it), say so when a killed run's stale lock is taken over, and
        remove temp files a killed run left.  Returns the stale holder."""
        stale = self.lock.acquire()
        if self.lock.note:
            print(f"avhb: note: {self.root}: {self.lock.note}", file=sys.stderr)
        self.clean_temp_files()
        return stale

    def close(self) -> None:
        """Release the lock.  A folder this process created and left holding
        nothing but its ``.lock`` (a command that failed before it started:
        an unknown task, a judge that cannot be built) is removed, lock
        first while still held, then the empty folders."""
        if self.created and self.lock.held and _holds_nothing(self.root):
            try:
                self.lock.path.unlink()
            except OSError:
                pass
            self.lock.release()
            for folder in self.created:  # the run folder first, then the parents made for it
                try:
                    _remove_empty(folder)
                except OSError:
                    break
            return
        self.lock.release()

    def clean_temp_files(self) -> list[Path]:
        """Remove ``.*.tmp`` files of interrupted atomic writes (call only
        while holding the lock: a live writer's temp file is its own)."""
        removed = []
        for folder in (self.root, layout.samples_dir(self.root)):
            for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
                try:
                    tmp.unlink()
                    removed.append(tmp)
                except OSError:
                    pass
        return removed

    @property
    def journal_dir(self) -> Path:
        return layout.journal_dir(self.root)

    def write_run(self, info: dict[str, Any]) -> None:
        write_json_atomic(layout.run_file(self.root), info)

    def write_results(self, results: dict[str, Any]) -> None:
        write_json_atomic(layout.results_file(self.root), results)

    def samples_path(self, task: str) -> Path:
        return layout.samples_path(self.root, task)

    @contextmanager
    def samples_file(self, task: str) -> Iterator[Callable[[list[SampleRecord]], None]]:
        """The task's samples file, written in steps: the block appends
        records (a window of them at a time, as they are scored) and the
        file is put in place when the block ends, so a reader never sees
        part of it; a block that raises leaves the file as it was."""
        path = self.samples_path(task)

        def append(records: list[SampleRecord]) -> None:
            try:
                _write_sample_lines(fh, records)
                fh.flush()  # a written window is in the file, not in this process
            except OSError as exc:
                raise write_failure(path, exc, RESUME_HINT) from None

        with atomic_file(path, hint=RESUME_HINT) as fh:
            yield append


def _holds_nothing(root: Path) -> bool:
    """Only the lock file and empty folders under ``root``."""
    for path in root.rglob("*"):
        if path.is_dir():
            continue
        if path.parent != root or path.name != LOCK_NAME:
            return False
    return True


def _remove_empty(folder: Path) -> None:
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        sub.rmdir()
    folder.rmdir()


def _write_sample_lines(fh: Any, records: list[SampleRecord]) -> None:
    for r in records:
        meta = r.meta
        line = {
            "id": r.id, "repeat": r.repeat, "doc": _public_doc(r.doc), "prompt_hash": meta.get("prompt_hash"),
            "prompt": meta.get("prompt"), "media": meta.get("media"), "adaptations": meta.get("adaptations", []),
            "target": r.target, "response": r.response, "extracted": r.extracted, "scores": r.scores,
            "judgements": r.judgements, "error": r.error,
        }
        if r.trajectory:
            line["trajectory"] = r.trajectory
        if r.outputs:
            line["outputs"] = r.outputs
        line["flags"] = {k: v for k, v in meta.items() if k not in _LOGGED_ELSEWHERE}
        fh.write(redacted_json(line, default=_default)[0] + "\n")  # = json.dumps(redact(line), ...)


_LOGGED_ELSEWHERE = ("prompt", "prompt_hash", "media", "adaptations")


_PLAIN = frozenset({int, float, bool, type(None), list, dict})  # never bytes, never an array


def logged_doc(doc: dict[str, Any]) -> Any:
    """A sample's fields as its samples-file line holds them once read
    back (:func:`_public_doc`, redacted, through JSON)."""
    return json.loads(redacted_json(_public_doc(doc), default=_default)[0])


def _public_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """The sample's fields, without bulky or binary values (no base64 media)."""
    out = {}
    for k, v in doc.items():
        kind = v.__class__
        if kind is not str and kind not in _PLAIN:  # most fields: a string or a plain value, known at once
            if isinstance(v, (bytes, bytearray)) or hasattr(v, "shape"):
                continue
        if isinstance(v, str) and len(v) > 20000:
            v = v[:20000] + "…"
        out[k] = v
    return out
