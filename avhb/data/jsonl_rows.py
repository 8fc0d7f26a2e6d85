"""A .jsonl data file's rows, decoded when they are used.

One scan counts the rows and keeps the byte offset of every 64th row (a
mark); the first pass over the rows checks every line (UTF-8, one JSON
object; an error names the file and the 1-based line), and a row is read
and decoded again from its line when a window of samples needs it
(:meth:`JsonlRows.take`: the bytes from the mark before a window's first
row to the mark after its last, in one read).  Between uses a task's
documents so cost a sixteenth of a byte each, not the decoded row (a
million rows of 500 bytes: 62 KB, not about a gigabyte held from reading
to the last window).

The file must not change under the run: every read compares its size and
modification time with the scan's, and a changed file is an error naming
it, never rows of a file the run did not check.
"""
from __future__ import annotations

import json
import os
from array import array
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Sequence, overload

from avhb.errors import UserError

_decode_json = json.JSONDecoder().decode  # json.loads without its per-call checks (a str is given)


def _stamp(st: os.stat_result) -> tuple[int, int]:
    return st.st_size, st.st_mtime_ns


MARK = 64  # rows between two kept offsets


def _marks(path: Path) -> tuple[array, int]:
    """(the byte offset of every ``MARK``-th row of ``path``, the number of
    rows): a row is a line that is not blank (4 bytes an offset in a file
    under 4 GiB)."""
    marks = array("I" if os.path.getsize(path) < 1 << 32 else "q")
    offset = rows = 0
    with open(path, "rb") as fh:
        for raw in fh:
            if _is_row(raw):
                if rows % MARK == 0:
                    marks.append(offset)
                rows += 1
            offset += len(raw)
    return marks, rows


def _is_row(raw: bytes) -> bool:
    return raw[:1] == b"{" or not _blank(raw)


def _blank(raw: bytes) -> bool:
    """Nothing but whitespace (any Unicode whitespace), as :func:`_row` skips."""
    return not raw.decode("utf-8", "replace").strip()


def _row(where: str, raw: bytes) -> dict[str, Any] | None:
    """The row of a line; None for a blank one (any Unicode whitespace)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{where}: not UTF-8 text (byte {exc.start} of the line)") from None
    try:
        row = _decode_json(line)
    except ValueError:
        if _blank(raw):
            return None
        try:
            json.loads(line)  # its message (a BOM: "decode using utf-8-sig")
        except ValueError as exc:
            raise UserError(f"{where}: not valid JSON: {getattr(exc, 'msg', exc)} "
                            f"(column {getattr(exc, 'colno', '?')})") from None
        raise
    if type(row) is not dict:
        raise UserError(f"{where}: a row must be a JSON object (one sample), got {type(row).__name__}")
    return row


class JsonlRows(Sequence[dict[str, Any]]):
    """The rows of one .jsonl file (module docstring): a sequence whose
    items are decoded from the file when asked, a fresh dict each time.
    Making one counts the rows and marks every 64th; the first pass over the rows (the
    run's reader makes it before any call) checks every line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self._stamp = _stamp(os.stat(self.path))
            self._marks, self._count = _marks(self.path)
            if _stamp(os.stat(self.path)) != self._stamp:
                raise UserError(f"{self.path}: changed while it was being read; read it again when it is written")
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read data: {exc.strerror or exc}") from None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return self.take(range(len(self))[index])
        if not -len(self) <= index < len(self):
            raise IndexError("row index out of range")
        return self.take([index % len(self)])[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The rows in order, read one at a time (none held here); a bad
        line is named by its line number."""
        try:
            with open(self.path, "rb") as fh:
                self._unchanged(fh)
                for lineno, raw in enumerate(fh, 1):
                    row = _row(f"{self.path}:{lineno}", raw)
                    if row is not None:
                        yield row
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read data: {exc.strerror or exc}") from None

    def take(self, positions: Iterable[int]) -> list[dict[str, Any]]:
        """The rows at ``positions`` (indices of rows, in any order), read
        in one opening of the file: each run of consecutive rows (a
        window's, as a run takes them) in one read."""
        out: list[dict[str, Any]] = []
        try:
            with open(self.path, "rb") as fh:
                self._unchanged(fh)
                for first, last in _runs(positions):
                    out.extend(self._rows(fh, first, last))
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read data: {exc.strerror or exc}") from None
        return out

    def _rows(self, fh: BinaryIO, first: int, last: int) -> Iterator[dict[str, Any]]:
        """Rows ``first`` to ``last`` (both included), from one read of the
        bytes between the marks around them."""
        marks = self._marks
        start = marks[first // MARK]
        after = last // MARK + 1
        fh.seek(start)
        data = fh.read(marks[after] - start) if after < len(marks) else fh.read()
        index, at = first - first % MARK, 0
        while index <= last:
            end = data.find(b"\n", at)
            raw = data[at:] if end < 0 else data[at:end + 1]
            if _is_row(raw):
                if index >= first:
                    try:
                        row = _row("", raw)
                    except UserError:  # said again with the line's number
                        _row(f"{self.path}:{self._lineno(start + at)}", raw)
                        raise
                    assert row is not None, "a blank line taken for a row"
                    yield row
                index += 1
            if end < 0:  # the file's last line
                break
            at = end + 1

    def _unchanged(self, fh: BinaryIO) -> None:
        if _stamp(os.fstat(fh.fileno())) != self._stamp:
            raise UserError(f"{self.path}: the data file changed during the run (its size or modification time "
                            "is not what it was when the run read it first); rerun the command to read it again")

    def _lineno(self, offset: int) -> int:
        with open(self.path, "rb") as fh:
            return fh.read(offset).count(b"\n") + 1


def _runs(positions: Iterable[int]) -> Iterator[tuple[int, int]]:
    """``positions`` as runs of consecutive indices, in their order:
    (first, last) of each."""
    first = last = None
    for p in positions:
        if last is not None and p == last + 1:
            last = p
            continue
        if first is not None:
            yield first, last  # type: ignore[misc]
        first = last = p
    if first is not None:
        yield first, last  # type: ignore[misc]
