"""Live progress of one run stage (decoding, model, judging).

On a terminal: a tqdm bar with count, rate, ETA, errors so far and judge
cost. Otherwise (logs, CI): plain lines on stderr, at most one per
``interval_s`` seconds or per 10 % of the total, whichever comes first, and
a final summary line on exit.

    with Progress("model", total=len(samples)) as p:
        for ...:
            p.update(error=failed, cost=usage_cost)
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO


def fmt_duration(seconds: float | None) -> str:
    """h:mm:ss (or m:ss under an hour); '?' when unknown."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Context manager; ``update(n=1, error=False, cost=0.0)`` records ``n``
    finished items (``error`` marks them failed, ``cost`` adds judge cost in
    currency units). Thread-safe.  ``Progress.quiet = True`` (``--verbosity
    ERROR``) shows nothing."""

    quiet = False

    def __init__(
        self,
        stage: str,
        total: int,
        *,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stage = stage
        self.total = max(int(total), 0)
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            isatty = getattr(self.stream, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.interval_s = interval_s
        self.clock = clock
        self.count = 0
        self.errors = 0
        self.cost = 0.0
        self._lock = threading.Lock()
        self._bar = None
        self._start = 0.0
        self._last_print = 0.0
        self._last_decile = 0

    # -- context manager -------------------------------------------------
    def __enter__(self) -> "Progress":
        self._start = self._last_print = self.clock()
        if self.interactive and not self.quiet:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total or None, desc=self.stage, unit="it", file=self.stream,
                             dynamic_ncols=True, leave=True)
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            else:
                self._emit(final=True)

    # -- numbers -----------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return max(self.clock() - self._start, 0.0)

    @property
    def rate(self) -> float | None:
        """Items per second so far (None before any time has passed)."""
        e = self.elapsed
        return self.count / e if e > 0 else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate (None when unknown)."""
        rate = self.rate
        if not rate or not self.total:
            return None
        return max(self.total - self.count, 0) / rate

    def line(self, final: bool = False) -> str:
        """The plain status line, e.g.
        ``[model] 450/1000 (45%) 12.3/s ETA 0:45 errors 3 cost 0.0123``."""
        pct = f" ({100 * self.count / self.total:.0f}%)" if self.total else ""
        rate = self.rate
        parts = [f"[{self.stage}] {self.count}/{self.total or '?'}{pct}",
                 f"{rate:.2f}/s" if rate is not None else "-/s"]
        parts.append(f"done in {fmt_duration(self.elapsed)}" if final else f"ETA {fmt_duration(self.eta)}")
        parts.append(f"errors {self.errors}")
        if self.cost:
            parts.append(f"cost {self.cost:.4f}")
        return " ".join(parts)

    # -- updates -----------------------------------------------------------
    def update(self, n: int = 1, error: bool = False, cost: float = 0.0) -> None:
        with self._lock:
            self.count += n
            if error:
                self.errors += n
            self.cost += cost
            if self._bar is not None:
                self._bar.update(n)
                post = {"errors": self.errors}
                if self.cost:
                    post["cost"] = f"{self.cost:.4f}"
                self._bar.set_postfix(post, refresh=False)
                return
            now = self.clock()
            decile = (10 * self.count // self.total) if self.total else 0
            if now - self._last_print >= self.interval_s or decile > self._last_decile:
                self._emit()

    def _emit(self, final: bool = False) -> None:
        self._last_print = self.clock()
        if self.total:
            self._last_decile = 10 * self.count // self.total
        if self.quiet:
            return
        self.stream.write(self.line(final) + "\n")
        self.stream.flush()
