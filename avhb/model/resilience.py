"""THE retry policy and adaptive concurrency (pure asyncio).

One retry loop, :meth:`Resilient.call`, for everything avhb retries: the
caller (:mod:`avhb.call.caller`, ``Caller.send``) runs every backend's
attempts through it, with the backend's :class:`RetryPolicy`, limiter and
``classify`` and the caller's breaker; a backend makes one attempt per
``generate`` and retries nothing itself.  ``avhb prepare``'s downloads
(:func:`avhb.data.download.fetch_http`) and Hub snapshots
(:func:`avhb.data.hub.snapshot`) run theirs through it too
(:meth:`Resilient.call_sync`).

Definitions:

- A *retryable* failure is HTTP 408, 409, 425, 429 or any 5xx, a timeout, a
  refused/reset connection, or a reply that is not valid JSON.  Anything else
  (400, 401, 404...) fails at once.
- Backoff uses *full jitter*: before retry ``k`` (k = 1, 2, ...) the wait is
  ``uniform(0, min(max_delay, base_delay * 2 ** (k - 1)))``.  When the server
  sent ``Retry-After`` (seconds or an HTTP date) the wait is that value
  (capped at ``max_retry_after``) instead.
- At most ``max_attempts`` attempts per call (the first one included); after
  that the call returns an ``Outcome`` carrying the last error, which the
  backend records as that sample's error.  The run goes on.
- The limiter is AIMD: a 429 halves the limit (at most once per "epoch", so a
  burst of 429s from requests that were already in flight counts once), and
  ``increase_after`` consecutive successes raise it by one, up to ``max_limit``.
  A 429 carrying Retry-After also pauses new acquisitions until then.
- The *circuit breaker* (:class:`CircuitBreaker`, one per backend, shared by
  all its calls; the caller owns it) opens after ``threshold`` (10)
  failures of one kind (``HTTP 503``, ``ClientConnectorError``, ...) with no
  success in between, counting every attempt, spread over at least
  ``quiet`` (5) seconds since the first of them was sent (429s are not
  counted).  Once open, nothing more is
  sent: ``Resilient.call`` stops before its next attempt and the caller
  records the remaining calls as not attempted.  Every attempt of every
  backend is reported to the breaker by the loop (a sample's own error,
  ``SampleError``, is not); a final error ``Response`` counts as one
  failed attempt.
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
import weakref
from collections import Counter, deque
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Awaitable, Callable, Generic, TypeVar

from avhb.errors import SampleError, UserError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


@dataclass
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 0.5  # seconds; first backoff ceiling
    max_delay: float = 30.0  # ceiling of any computed backoff
    max_retry_after: float = 120.0  # longest server-requested wait honoured

    def delay(self, retry: int, failure: "Failure", rng: Callable[[], float] = random.random) -> float:
        """The wait before retry number ``retry`` (1-based) after
        ``failure``: the server's Retry-After (capped), else full jitter."""
        if failure.retry_after is not None:
            return min(failure.retry_after, self.max_retry_after)
        return backoff_delay(retry, self, rng)


@dataclass
class Failure:
    """How one failed attempt is classified."""

    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None  # seconds, from the server
    rate_limited: bool = False  # 429: shrink the concurrency limit
    sample: bool = False  # this sample's problem (SampleError), not the backend's: not retried, not counted


class HTTPStatusFailure(Exception):
    """Raised by a transport for a non-2xx reply; ``detail``: the reply's
    error object when it sent one (OpenAI's ``{"message", "param", "code"}``)."""

    def __init__(self, status: int, message: str = "", headers: dict[str, str] | None = None,
                 detail: dict[str, Any] | None = None):
        super().__init__(f"HTTP {status}: {message}".rstrip(": "))
        self.status_code = status
        self.headers = headers or {}
        self.detail = detail or {}


class MalformedReply(Exception):
    """A 2xx reply whose body could not be parsed.  Retryable."""


@dataclass
class Outcome(Generic[T]):
    value: T | None = None
    error: str | None = None
    attempts: int = 0
    retry_wait: float = 0.0  # seconds spent waiting between attempts
    refused: bool = False  # the breaker was open before the first attempt: nothing was sent
    failure: Failure | None = None  # how the last attempt failed
    exception: BaseException | None = None  # what the last attempt raised

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_retry_after(value: Any, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: a non-negative number of
    seconds or an HTTP date (RFC 9110).  ``now`` is a UNIX time (default: the
    current time).  Unparsable or missing -> None; a date in the past -> 0."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return max(0.0, seconds) if seconds == seconds else None  # NaN -> None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_delay(retry: int, policy: RetryPolicy, rng: Callable[[], float] = random.random) -> float:
    """Full-jitter wait before retry number ``retry`` (1-based)."""
    ceiling = min(policy.max_delay, policy.base_delay * (2 ** (retry - 1)))
    return rng() * ceiling


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    try:
        value = headers.get(name)
        if value is None:
            value = headers.get(name.lower())
    except AttributeError:
        return None
    return value


def classify_exception(exc: BaseException) -> Failure:
    """Default classification by duck typing, so no HTTP library is imported
    here: ``status_code`` (+ ``headers`` or ``response.headers``) for HTTP
    errors; timeout and connection errors by type (or type name, for client
    libraries whose errors do not derive from the builtins)."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(exc, "status", None) if isinstance(getattr(exc, "status", None), int) else None
    if isinstance(exc, SampleError):
        return Failure(str(exc), False, sample=True)
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(status, int):
        headers = getattr(exc, "headers", None)
        if not headers and getattr(exc, "response", None) is not None:
            headers = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = parse_retry_after(_header(headers, "Retry-After"))
        retryable = status in RETRYABLE_STATUS or 500 <= status <= 599
        return Failure(message, retryable, status, retry_after, rate_limited=status == 429)
    if isinstance(exc, MalformedReply):
        return Failure(message, True)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return Failure(message, True)
    names = " ".join(t.__name__ for t in type(exc).__mro__).lower()
    if "timeout" in names or "connection" in names or "disconnect" in names:
        return Failure(message, True)
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)):
        return Failure(message, False, sample=True)  # the sample's own file: another attempt reads the same
    if isinstance(exc, OSError):
        return Failure(message, True)
    return Failure(message, False)


class AdaptiveLimiter:
    """An AIMD concurrency limit (see the module docstring)."""

    def __init__(self, max_limit: int, *, min_limit: int = 1, increase_after: int = 10,
                 initial: int | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        if max_limit < 1:
            raise ValueError("max_limit must be >= 1")
        self.max_limit = max_limit
        self.min_limit = max(1, min(min_limit, max_limit))
        self.increase_after = max(1, increase_after)
        self.limit = max_limit if initial is None else max(self.min_limit, min(initial, max_limit))
        self.in_flight = 0
        self.max_seen_in_flight = 0
        self.epoch = 0  # bumps on every decrease
        self.decreases = 0
        self._streak = 0
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future] = deque()
        self._clock = clock
        self._sleep = sleep

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch the slot was granted in."""
        while True:
            wait = self._paused_until - self._clock()
            if wait > 0:
                await self._sleep(wait)
                continue
            if self.in_flight < self.limit and not self._waiters:
                break
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self._wake()  # pass the wake-up on
                raise
            if self.in_flight < self.limit:
                break
        self.in_flight += 1
        self.max_seen_in_flight = max(self.max_seen_in_flight, self.in_flight)
        return self.epoch

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def on_success(self) -> None:
        self._streak += 1
        if self._streak >= self.increase_after:
            self._streak = 0
            if self.limit < self.max_limit:
                self.limit += 1
                self._wake()

    def on_rate_limited(self, epoch: int, retry_after: float | None = None) -> None:
        """A 429 seen by a request granted in ``epoch``."""
        self._streak = 0
        if retry_after:
            self._paused_until = max(self._paused_until, self._clock() + retry_after)
        if epoch == self.epoch:
            self.limit = max(self.min_limit, self.limit // 2)
            self.epoch += 1
            self.decreases += 1


BREAKER_THRESHOLD = 10  # failures of one kind since the last success ...
BREAKER_QUIET = 5.0  # ... over at least this many seconds without a success, open a breaker


def failure_kind(message: str, status: int | None = None) -> str:
    """The kind of a failure, for the breaker: ``HTTP <status>``, else the
    message's leading exception name (``ClientConnectorError``), else the
    message with its numbers blanked."""
    if status is not None:
        return f"HTTP {status}"
    head = message.split(":", 1)[0].strip()
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", head or "-"):
        return head
    return re.sub(r"\d+", "#", message)[:80]


class CircuitBreaker:
    """Opens when the backend has not answered for a while (module
    docstring): at least ``threshold`` failures of one kind since the last
    success, *and* at least ``quiet`` seconds since the first of them was
    sent.  Both are needed: under a fault storm a burst of ten time-outs
    can arrive together while other requests keep succeeding; a dead
    server fails everything, for as long as one keeps asking.  Rate
    limiting (429) is not counted: the server is alive and the limiter
    slows down.  ``opened_with`` is the last error once open."""

    def __init__(self, threshold: int = BREAKER_THRESHOLD, quiet: float = BREAKER_QUIET,
                 clock: Callable[[], float] = time.monotonic):
        self.threshold = max(1, int(threshold))
        self.quiet = float(quiet)
        self.streak = 0  # failures since the last success
        self._kinds: Counter[str] = Counter()
        self._since: float | None = None  # when the earliest failed attempt of the streak was sent
        self.last_error: str | None = None
        self.opened_with: str | None = None
        self.silent_for = 0.0  # seconds without an answer when it opened
        self.not_attempted = 0  # calls refused while open
        self.stopped_by: str | None = None  # why it was opened from outside (a stop signal), not by failures
        self._waiters: set[asyncio.Future] = set()
        self._clock = clock
        _breakers.add(self)
        if _stop_reason is not None:  # a backend built after the run was told to stop sends nothing either
            self.stop(_stop_reason)

    @property
    def open(self) -> bool:
        return self.opened_with is not None

    def success(self) -> None:
        if not self.open:
            self.streak = 0
            self._kinds.clear()
            self._since = None

    def failure(self, kind: str, message: str, started: float | None = None) -> None:
        """One failed attempt of ``kind``; ``started``: when it was sent
        (``clock`` time; default now)."""
        now = self._clock()
        started = now if started is None else min(started, now)
        self.streak += 1
        self._kinds[kind] += 1
        self.last_error = message
        self._since = started if self._since is None else min(self._since, started)
        if not self.open and self._kinds[kind] >= self.threshold and now - self._since >= self.quiet:
            self.opened_with = message
            self.silent_for = now - self._since
            self._wake()

    def stop(self, reason: str) -> None:
        """Open now for a reason outside the backend (the run was told to
        stop): nothing more is sent, calls in flight finish."""
        self.stopped_by = reason
        if not self.open:
            self.opened_with = reason
            self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_open(self, seconds: float, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        """Sleep ``seconds`` (a retry backoff), waking early if the breaker
        opens meanwhile."""
        if self.open:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        sleeper = asyncio.ensure_future(sleep(seconds))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiters.discard(waiter)
            sleeper.cancel()
            waiter.cancel()


_breakers: "weakref.WeakSet[CircuitBreaker]" = weakref.WeakSet()
_stop_reason: str | None = None


def stop_every_breaker(reason: str | None) -> None:
    """Open every breaker of this process with ``reason`` (``avhb.process.interrupt``:
    a stop signal), and those built later too; ``None`` ends that for the
    breakers built from now on (the next run in this process)."""
    global _stop_reason
    _stop_reason = reason
    if reason is not None:
        for breaker in list(_breakers):
            breaker.stop(reason)


class Resilient:
    """THE retry loop: one call of ``fn`` under ``policy``, each attempt
    under the limiter, each failed attempt classified by ``classify``.

    The caller (:mod:`avhb.call.caller`) runs every backend's attempts
    through one of these (with the backend's policy, limiter and
    ``classify``, and the caller's breaker); ``avhb prepare``'s downloads
    and Hub fetches run theirs through one too (:meth:`call_sync`, no
    breaker).  A :class:`~avhb.errors.UserError` is never retried: it
    propagates at once, as does cancellation.  Any other exception is
    classified and ends as an :class:`Outcome`'s error (the last exception
    in ``Outcome.exception``)."""

    def __init__(self, policy: RetryPolicy | None = None, limiter: AdaptiveLimiter | None = None, *,
                 classify: Callable[[BaseException], Failure] = classify_exception,
                 breaker: CircuitBreaker | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 rng: Callable[[], float] = random.random):
        self.policy = policy or RetryPolicy()
        self.limiter = limiter or AdaptiveLimiter(32)
        self.classify = classify
        self.breaker = breaker
        self._sleep = sleep
        self._rng = rng
        self.retries = 0  # retries across all calls (for reports)

    def _refused(self, attempt: int, waited: float) -> Outcome:
        assert self.breaker is not None
        why = self.breaker.stopped_by or f"the backend stopped answering ({self.breaker.opened_with})"
        return Outcome(error=f"not sent: {why}", attempts=attempt - 1, retry_wait=waited, refused=attempt == 1)

    async def call(self, fn: Callable[[], Awaitable[T]], *,
                   error_of: Callable[[T], str | None] | None = None) -> Outcome[T]:
        """Attempts of ``fn`` until one returns, a failure is not
        retryable, the policy's attempts are spent, or the breaker opens.
        ``error_of``: the error of a value ``fn`` returned as a final,
        failed answer (a backend's ``Response.error``): not retried, counted
        by the breaker as a failed attempt."""
        waited = 0.0
        attempts = max(1, self.policy.max_attempts)
        failure: Failure | None = None
        exception: BaseException | None = None
        breaker = self.breaker
        attempt = 0
        for attempt in range(1, attempts + 1):
            if breaker is not None and breaker.open:
                return self._refused(attempt, waited)
            epoch = await self.limiter.acquire()
            if breaker is not None and breaker.open:  # opened while this call waited for a slot
                self.limiter.release()
                return self._refused(attempt, waited)
            sent = time.monotonic()
            try:
                value = await fn()
            except (asyncio.CancelledError, UserError):
                raise
            except Exception as exc:  # classified below; never escapes
                exception = exc
                failure = self.classify(exc)
                if breaker is not None and not (failure.rate_limited or failure.sample):
                    breaker.failure(failure_kind(failure.message, failure.status), failure.message, sent)
            else:
                error = error_of(value) if error_of is not None else None
                if breaker is not None:
                    if error is None:
                        breaker.success()
                    else:
                        breaker.failure(failure_kind(error), error, sent)
                if error is None:
                    self.limiter.on_success()
                return Outcome(value=value, attempts=attempt, retry_wait=waited)
            finally:
                self.limiter.release()
            if failure.rate_limited:
                ra = None if failure.retry_after is None else min(failure.retry_after, self.policy.max_retry_after)
                self.limiter.on_rate_limited(epoch, ra)
            if not failure.retryable or attempt == attempts:
                break
            delay = self.policy.delay(attempt, failure, self._rng)
            self.retries += 1
            waited += delay
            if delay > 0:
                if breaker is not None:
                    await breaker.wait_open(delay, self._sleep)
                else:
                    await self._sleep(delay)
        assert failure is not None
        plural = "" if attempt == 1 else "s"
        tail = f" (gave up after {attempt} attempt{plural})" if failure.retryable else ""
        return Outcome(error=failure.message + tail, attempts=attempt, retry_wait=waited,
                       failure=failure, exception=exception)

    def call_sync(self, fn: Callable[[], T]) -> Outcome[T]:
        """:meth:`call` for a blocking ``fn`` (a download): the same loop,
        on an event loop of its own (in a thread of its own when this
        thread already runs one); the waits are real sleeps."""
        async def attempt() -> T:
            return fn()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.call(attempt))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self.call(attempt)).result()
