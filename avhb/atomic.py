"""THE atomic file write: every file avhb, its packs and its backends write
whole (run.json, results.json, samples, reports, caches, markers,
manifests, a merged journal, an assembled model file) goes through
:func:`write_atomic`, so a reader never sees half a file and a crash
leaves at most a temp file ``.NAME.PID.THREAD.tmp`` beside it
(``RunFolder.open`` removes a killed run's).  The journal is the one
exception: it is appended to, line by line (:mod:`avhb.runfolder.journal`)."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from avhb.errors import EnvironmentFailure


def temp_path(path: Path) -> Path:
    """Where :func:`write_atomic` writes ``path`` before the rename: in the
    same folder (a rename within one file system), hidden, unique to this
    process and thread, ending in ``.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def write_atomic(path: Path | str, write: Callable[[Any], None], *, binary: bool = False,
                 durable: bool = True, hint: str = "") -> None:
    """Write ``path`` through a temp file and a rename; ``write(fh)`` fills
    the file (text, UTF-8; ``binary``: bytes).  ``durable``: fsync before
    the rename (a cache passes False: losing it costs a recomputation).
    Whatever ``write`` raises removes the temp file and leaves ``path`` as
    it was; an OS error (full disk, read-only folder...) is raised as
    :class:`EnvironmentFailure` (one line, ``hint`` appended)."""
    with atomic_file(path, binary=binary, durable=durable, hint=hint) as fh:
        try:
            write(fh)
        except OSError as exc:
            raise write_failure(path, exc, hint) from None


@contextmanager
def atomic_file(path: Path | str, *, binary: bool = False, durable: bool = True, hint: str = "") -> Iterator[Any]:
    """:func:`write_atomic` for a file filled in steps (a task's samples,
    appended window by window while the task runs): the open temp file,
    renamed to ``path`` when the block ends.  Whatever the block raises
    removes the temp file and leaves ``path`` as it was, and is raised as
    itself: the block converts its own write errors (:func:`write_failure`),
    and closing the discarded file (a full disk refusing the rest of its
    buffer) raises nothing more; an OS error of the temp file's opening,
    last flush, fsync, close or rename is raised as
    :class:`EnvironmentFailure`."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8")
    except OSError as exc:
        _discard(None, tmp)
        raise write_failure(path, exc, hint) from None
    try:
        yield fh
    except BaseException:
        _discard(fh, tmp)
        raise
    try:
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
        fh.close()
        os.replace(tmp, path)
    except BaseException as exc:
        _discard(fh, tmp)
        if isinstance(exc, OSError):
            raise write_failure(path, exc, hint) from None
        raise


def _discard(fh: Any, tmp: Path) -> None:
    """Close ``fh`` and remove the temp file, raising nothing: the write
    is failing already (a second error, such as the buffered rest refused
    by the same full disk, would hide the first)."""
    if fh is not None:
        try:
            fh.close()
        except OSError:
            pass
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def write_failure(path: Path | str, exc: OSError, hint: str = "") -> EnvironmentFailure:
    """An OS error writing ``path`` (full disk, read-only folder...), as one line."""
    return EnvironmentFailure(f"cannot write {path}: {exc.strerror or exc}" + (f"; {hint}" if hint else ""))
