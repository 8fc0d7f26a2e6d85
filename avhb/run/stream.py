"""A task's samples through generate -> score -> write, a window at a time.

A window is a run of consecutive records, every repeat of a sample in the
same window (lm-eval's filter pipelines take a sample's repeats together).
Each window is generated, scored and appended to the task's samples file
(:meth:`avhb.runfolder.folder.RunFolder.samples_file`: put in place when the task
ends), then its records are reduced to what the task's aggregates read
(:func:`slim`).  So a task holds its records whole for one window only:
the prompt, the reply's metadata and the document of a sample already
written are not kept until the task ends.

A window is ``WINDOW`` samples or 32 times what the model takes at once,
whichever is more: between windows the calls in flight finish before the
next window's start, a wait that this keeps to a small part of a window.

A replaying run (``avhb score``, ``avhb merge``) keeps its one window: when
an answer is not in the journal it reports the task's records whole
(``NotInRunJournal``), and it sends no calls whose flow a window would cut.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from avhb.run.budget import error_cause
from avhb.run.reduced import NOTHING, Interned
from avhb.score.metric import RECORD_FIELDS, SampleRecord, reads_of

WINDOW = 8192  # samples (each with its repeats) held whole at once


def window_size(concurrency: int) -> int:
    return max(WINDOW, 32 * max(1, concurrency))


def kept_fields(metrics: Iterable[Any]) -> frozenset[str] | None:
    """The record fields the metrics' aggregates read (beyond what the
    summary always keeps); None when one of them does not say (a plugin
    metric without ``reads``): the records are kept whole."""
    out: set[str] = set()
    for m in metrics:
        reads = reads_of(m)
        if reads is None:
            return None
        out |= reads
    return frozenset(out)


def slim(records: list[SampleRecord], keep: frozenset[str] | None, breakdown: Iterable[str]) -> None:
    """Drop, in place, what no aggregate of the task reads (``keep``:
    :func:`kept_fields`); the document keeps its ``breakdown`` fields
    unless ``doc`` is kept whole.  ``keep`` None: nothing is dropped."""
    if keep is None:
        return
    axes = tuple(breakdown)
    drop = sorted(RECORD_FIELDS - keep)
    shared = Interned()  # equal scores, one read-only mapping (a binary metric: two)
    for r in records:
        r.scores = shared.shared(r.scores)
        for name in drop:
            if name == "doc":
                r.doc = {k: r.doc[k] for k in axes if k in r.doc} if axes else NOTHING
            elif name in ("target", "response", "extracted"):
                setattr(r, name, None)
            elif name == "trajectory":
                r.trajectory = ()  # type: ignore[assignment]
            else:
                setattr(r, name, NOTHING)


@dataclass
class Failures:
    """A task's failed samples as its windows finish: how many, the first,
    how many share each cause (:func:`avhb.run.budget.error_cause`)."""

    count: int = 0
    not_attempted: int = 0  # samples an open breaker never sent
    first: tuple[str, str] | None = None  # (sample id, error)
    causes: Counter[str] = field(default_factory=Counter)
    crashes: int = 0  # samples whose filter or metric raised
    first_crash: str | None = None

    def add_crashes(self, errors: list[str]) -> None:
        self.crashes += len(errors)
        if errors and self.first_crash is None:
            self.first_crash = errors[0]

    def add(self, records: list[SampleRecord]) -> None:
        for r in records:
            if r.error:
                self.count += 1
                if "not attempted: " in r.error:
                    self.not_attempted += 1
                if self.first is None:
                    self.first = (str(r.id), r.error)
                self.causes[error_cause(r.error, str(r.id))] += 1
