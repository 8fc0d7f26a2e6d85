"""The event loop a run's calls share: uvloop's where it is installed (a
dependency of avhb outside Windows), asyncio's own otherwise.

Every sample's call goes through the loop several times (its driver, the
caller's limits, the backend's socket, the journal), so its cost per
wake-up is per-sample cost: with uvloop an OpenAI-compatible request
costs about a tenth less CPU (issue 26, ``benchmarks/scale.py``).  The
answers do not depend on the loop; nothing else changes.
"""
from __future__ import annotations

import asyncio
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on the run's event loop (module docstring)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)
