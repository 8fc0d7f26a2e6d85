"""Stop signals: SIGTERM (a scheduler preempting or cancelling the job,
``kill``) and SIGUSR1 (SLURM's warning before a time limit, forwarded by
``docs/examples/avhb-shards.sbatch``) stop a run so that it can resume
anywhere, instead of the default of dying where it stands:

1. the first signal opens every backend's circuit breaker with "stopped by
   SIGTERM" (:func:`avhb.model.resilience.stop_every_breaker`): nothing new
   is sent, retries stop, the calls in flight finish and are journaled; the
   task in progress records its remaining samples as not attempted and
   writes its samples and results (marked ``stopped``), later tasks do not
   start — the circuit breaker's path (``docs/errors.md``);
2. calls still in flight after ``GRACE_S`` seconds (20: SLURM waits
   ``KillWait``, 30 s by default, between SIGTERM and SIGKILL), or a second
   signal (``SAME_S`` = 2 s or more after the first: SLURM signals every
   process of the job, and a batch script passing the signal on sends it
   again), cancel the run where it is (what finished is in the journal);
3. the run folder's lock is released (``Evaluator.run``'s ``finally``), so
   the resumed run may start on another machine at once, and the command
   exits ``128 + signum`` (143 for SIGTERM, 138 for SIGUSR1) with one line
   (:class:`avhb.errors.Interrupted`).

SIGINT (Ctrl-C) keeps Python's behaviour: cancel at once, exit 130.

A run whose lock was taken over while it held it (``RunLock.on_lost``: a
suspended job whose lease expired) is cancelled at once instead: another
process owns the folder now.
"""
from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any, Awaitable, Iterator, TypeVar

from avhb.errors import EnvironmentFailure, Interrupted, RunStopped
from avhb.model.resilience import stop_every_breaker

GRACE_S = 20.0
SAME_S = 2.0  # a signal this soon after the first is the same request (SLURM signals every process of the job)
SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
T = TypeVar("T")


def _name(signum: int) -> str:
    return signal.Signals(signum).name


def _resume_line(signum: int, what: str) -> str:
    return (f"stopped by {_name(signum)}: {what}; the run folder's lock is released: re-run the same command to "
            "resume (on any machine)")


async def stoppable(work: Awaitable[T], grace: float = GRACE_S, lock: Any = None) -> T:
    """Await ``work`` (the running task's main coroutine) under the stop
    signals (module docstring).  ``lock``: the run folder's ``RunLock``,
    whose loss cancels the run."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []
    lost: list[Any] = []
    timer: asyncio.TimerHandle | None = None
    first_at = 0.0

    def on_signal(signum: int) -> None:
        nonlocal timer, first_at
        if received:  # a second signal: now (one within SAME_S of the first is that one, passed on again)
            if loop.time() - first_at >= SAME_S:
                task.cancel()
            return
        received.append(signum)
        first_at = loop.time()
        print(f"avhb: {_name(signum)}: finishing the calls in flight (up to {grace:g} s), sending no new ones",
              file=sys.stderr)
        stop_every_breaker(f"stopped by {_name(signum)}")
        timer = loop.call_later(grace, task.cancel)

    def on_lost(who: Any) -> None:  # the lock's renewer thread
        lost.append(who)
        loop.call_soon_threadsafe(task.cancel)

    installed = []
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: the caller's handlers stay
            continue
        installed.append((signum, previous))
    if lock is not None:
        lock.on_lost = on_lost
    try:
        return await work
    except asyncio.CancelledError:
        if lost:
            task.uncancel()
            raise EnvironmentFailure(f"{lock.folder}: {lost[0].describe()} took the run folder's lock over (its lease "
                                     "had expired while this process was stopped): this run stopped without writing "
                                     "more; that process owns the folder now") from None
        if not received:
            raise
        task.uncancel()
        raise Interrupted(received[0], _resume_line(
            received[0], "calls still in flight were abandoned (their samples are asked again on resume)")) from None
    except RunStopped as exc:
        if not received:
            raise
        what = str(exc).removeprefix(f"stopped by {_name(received[0])}; ").removesuffix(
            "; re-running the command retries them")
        raise Interrupted(received[0], _resume_line(received[0], f"the calls in flight finished and were journaled, "
                                                                 f"{what}")) from None
    finally:
        if timer is not None:
            timer.cancel()
        if lock is not None:
            lock.on_lost = None
        for signum, previous in installed:
            loop.remove_signal_handler(signum)
            if previous is not None:  # None: a handler not set from Python, which remove_signal_handler reset
                signal.signal(signum, previous)
        stop_every_breaker(None)


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """Outside an event loop: a stop signal raises :class:`Interrupted`
    where the code stands (``finally`` blocks release the locks held)."""

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum, _resume_line(signum, "nothing was written after it"))

    previous = []
    for signum in SIGNALS:
        try:
            previous.append((signum, signal.signal(signum, handler)))
        except ValueError:  # not the main thread
            pass
    try:
        yield
    finally:
        for signum, old in previous:
            signal.signal(signum, old)
