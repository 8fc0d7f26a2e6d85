"""``samples/<task>.jsonl`` read back: the one reader of a samples file
(a run folder's, or a peer's samples file in the same one-object-a-line
form), and its one policy for a line that is not a sample.

A line is a sample when it is UTF-8 text holding one JSON object.  An
empty (or blank) line is nothing.  Any other line (torn by a crash, cut
short by a copy, edited by hand, bytes that are not UTF-8, a JSON list or
string) is skipped and recorded in :attr:`SamplesFile.bad` with its line
number and why, so the caller decides: a reader that shows the run lists
them (the report), one whose numbers need every sample refuses the file
naming the first (:meth:`SamplesFile.bad_summary`: ``avhb merge``, a
paired comparison, pooled statistics, the lm-eval export, pack commands).
A file that is not there holds no samples (:attr:`SamplesFile.missing`);
one that is there but cannot be read is one error naming it
(:class:`SamplesUnreadable`).

Lines are split at ``\\n`` only: a sample's text may hold U+2028 or other
characters :meth:`str.splitlines` would split at (samples are written with
``ensure_ascii=False``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from avhb.errors import UserError
from avhb.runfolder.layout import samples_path
from avhb.score.metric import SampleRecord

NOT_UTF8 = "not UTF-8"
NOT_JSON = "not JSON"
NOT_OBJECT = "not an object"


@dataclass(frozen=True)
class BadLine:
    """A line of a samples file that is not a sample, and why."""

    path: Path
    lineno: int  # 1-based
    why: str  # NOT_UTF8, NOT_JSON or NOT_OBJECT

    def __str__(self) -> str:
        return f"{self.path} line {self.lineno}: {self.why}"


class SampleLine(NamedTuple):
    """One sample line: its number, the object, and its text (without
    the line end)."""

    lineno: int
    row: dict[str, Any]
    text: str


class SamplesUnreadable(UserError):
    """A samples file that is there but cannot be read (permissions, an
    I/O error, a folder in its place)."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: unreadable ({reason})")
        self.path = path
        self.reason = reason


class SamplesFile:
    """One samples file, read line by line (module docstring).  After
    each pass :attr:`bad` holds the lines that were not samples,
    :attr:`passed_over` how many whole lines the caller's ``parse`` test
    left unparsed, and :attr:`missing` whether the file was there."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.bad: list[BadLine] = []
        self.passed_over = 0
        self.missing = False

    @classmethod
    def of(cls, run_dir: Path | str, task: str) -> "SamplesFile":
        """The run folder's samples file of ``task`` (:func:`avhb.runfolder.layout.samples_path`)."""
        return cls(samples_path(run_dir, task))

    def lines(self, parse: Callable[[bytes], bool] | None = None) -> Iterator[SampleLine]:
        """Every sample line in file order.  ``parse``: asked of each whole
        line (``{`` to ``}`` and its newline, as the run writes them) with
        the line's bytes; a line it answers False for is a sample counted
        in :attr:`passed_over` as it is, neither yielded, decoded nor
        examined (the report's count past its sample cap).  Raises
        :class:`SamplesUnreadable` when the file cannot be read."""
        self.bad = []
        self.passed_over = 0
        self.missing = False
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            self.missing = True
            return
        except OSError as exc:
            raise SamplesUnreadable(self.path, exc.strerror or str(exc)) from None
        bad = self.bad.append
        loads = json.loads
        with fh:
            try:
                for lineno, raw in enumerate(fh, 1):
                    if parse is not None and raw[:1] == b"{" and raw[-2:] == b"}\n" and not parse(raw):
                        self.passed_over += 1
                        continue
                    if not raw.strip():
                        continue
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        bad(BadLine(self.path, lineno, NOT_UTF8))
                        continue
                    try:
                        row = loads(text)
                    except ValueError:
                        bad(BadLine(self.path, lineno, NOT_JSON))
                        continue
                    if type(row) is not dict:
                        bad(BadLine(self.path, lineno, NOT_OBJECT))
                        continue
                    yield SampleLine(lineno, row, text.rstrip())
            except OSError as exc:  # an I/O error mid-file (a folder in its place fails here, at the first read)
                raise SamplesUnreadable(self.path, exc.strerror or str(exc)) from None

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every sample's object, in file order."""
        for line in self.lines():
            yield line.row

    def bad_summary(self) -> str | None:
        """The first bad line of the last pass, and how many more there
        are (``PATH line N: not JSON, and 2 more bad lines``); None when
        every line was a sample."""
        if not self.bad:
            return None
        more = len(self.bad) - 1
        return f"{self.bad[0]}, and {more} more bad line{'s' if more > 1 else ''}" if more else str(self.bad[0])


def sample_record(row: dict[str, Any]) -> SampleRecord:
    """A samples-file line as the record it was written from (what metrics
    see; the line's prompt, media and flags are not part of it)."""
    return SampleRecord(id=row["id"], doc=row.get("doc") or {}, target=row.get("target"), response=row.get("response"),
                        extracted=row.get("extracted"), error=row.get("error"), repeat=row.get("repeat", 0),
                        scores=row.get("scores") or {}, judgements=row.get("judgements") or {},
                        trajectory=row.get("trajectory") or [], outputs=row.get("outputs") or {})
