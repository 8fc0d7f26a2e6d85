"""How a run's coroutine runs (``avhb.evaluate``, ``avhb merge``): on
uvloop's event loop where it is installed (a dependency of avhb outside
Windows), asyncio's own otherwise, at the collector's run pace
(:mod:`avhb.process.gc_pace`).

Every sample's call goes through the loop several times (its driver, the
caller's limits, the backend's socket, the journal), so its cost per
wake-up is per-sample cost, and uvloop's is lower (``benchmarks/scale.py``
measures it; benchmarks/README.md).  The answers do not depend on the loop;
nothing else changes.
"""
from __future__ import annotations

import asyncio
from typing import Any, Coroutine, TypeVar

from avhb.process.gc_pace import run_pace

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on the run's event loop, at the run's
    collector pace (module docstring)."""
    try:
        import uvloop
    except ImportError:
        loop_factory = None  # asyncio's own loop, as asyncio.run makes it
    else:
        loop_factory = uvloop.new_event_loop
    with run_pace(), asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(coroutine)
