"""The garbage collector's pace while a run holds many objects.

CPython collects its youngest generation every 700 net allocations, and a
run allocates a few dozen objects per call (a request, its key, a journal
line, the reply): at CPython's thresholds a 100,000-sample run walks its
growing heap tens of thousands of times, a large share of the run's CPU
(benchmarks/README.md has the measurement).  A run makes almost no
reference cycles (its records, requests and replies are trees), so
collecting less often frees the same memory, a little later.

:func:`run_pace` raises the youngest generation's threshold for the span
of a run (:func:`avhb.process.event_loop.run` holds it around the run's event
loop) and puts the caller's thresholds back after it: an API user's
process is left as it was.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

YOUNG_THRESHOLD = 50_000  # net allocations between collections of the youngest generation (CPython: 700)
OLDER_THRESHOLDS = (20, 20)  # collections of one generation between collections of the next (CPython: 10, 10)


@contextmanager
def run_pace() -> Iterator[None]:
    """The run's collector thresholds, the previous ones restored on exit."""
    before = gc.get_threshold()
    young = max(before[0], YOUNG_THRESHOLD) if before[0] else 0  # a disabled threshold (0) stays disabled
    gc.set_threshold(young, *(max(b, o) for b, o in zip(before[1:], OLDER_THRESHOLDS)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
