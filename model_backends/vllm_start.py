"""Starting a vLLM engine: a start that fails is one ``UserError`` naming
vLLM's own reason.

vLLM builds its engine in other processes (the engine core, its workers);
when one of them fails, ``vllm.LLM`` raises only "Engine core
initialization failed. See root cause above": the reason is in the log the
failed process printed.  So while the engine starts, this process's
standard output and error (file descriptors 1 and 2, which the engine's
processes inherit) go through pipes that copy everything on to where it
went and keep the last part of it; a failed start's reason is read from
the exception itself when it says one (a setting vLLM refuses before it
starts anything: ``max_model_len`` above the model's), else from the first
exception line of that log that is not such a pointer to the log.

:func:`start_engine` raises the ``UserError`` once; the backend keeps it and
raises it again for every later call (the engine is started once), and the
caller's retry loop lets a ``UserError`` end the run at once.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from typing import Callable, TypeVar

from avhb import UserError

T = TypeVar("T")

KEPT_BYTES = 256 * 1024  # the last part of the start's output searched for the reason
DRAIN_SECONDS = 5.0  # after a failed start: how long the engine's last lines may take to arrive
LONGEST_REASON = 600  # characters

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "(EngineCore pid=12) ERROR 12-05 08:11:54 [core.py:1510] " -- vLLM's log prefix
_LOG_PREFIX = re.compile(r"^\([^)]*\)\s+(?:[A-Z]+\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*)?")
_RAISED = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Failure)): (\S.*)$")
_POINTERS = ("see root cause above", "see stack trace for root cause", "initialization failed due to an exception")


class OutputTee:
    """File descriptors 1 and 2 copied through pipes to where they went,
    the last :data:`KEPT_BYTES` kept.  :meth:`restore` gives them back;
    processes started meanwhile keep writing into the pipes, which are
    copied on until those processes end."""

    def __init__(self, fds: tuple[int, ...] = (1, 2)):
        self._lock = threading.Lock()
        self._kept = bytearray()
        self._saved: dict[int, int] = {}
        self._threads: list[threading.Thread] = []
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        for fd in fds:
            original = os.dup(fd)
            self._saved[fd] = os.dup(original)
            read, write = os.pipe()
            os.dup2(write, fd)
            os.close(write)
            thread = threading.Thread(target=self._copy, args=(read, original), daemon=True,
                                      name=f"avhb-vllm-output-{fd}")
            thread.start()
            self._threads.append(thread)

    def _copy(self, read: int, target: int) -> None:
        try:
            while chunk := os.read(read, 65536):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(target, view):]
                with self._lock:
                    self._kept += chunk
                    del self._kept[:-KEPT_BYTES]
        except OSError:  # the target went away: nothing more to copy to
            pass
        finally:
            os.close(read)
            os.close(target)

    def restore(self) -> None:
        """Descriptors 1 and 2 back to where they went (once)."""
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = {}

    def text(self, wait: float = 0.0) -> str:
        """What was kept, once the copies ended (at most ``wait`` seconds
        later: the failed engine's processes are exiting)."""
        for thread in self._threads:
            thread.join(wait / max(1, len(self._threads)))
        with self._lock:
            return bytes(self._kept).decode("utf-8", errors="replace")


def _flush(stream) -> None:
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):  # closed or replaced streams
        pass


def start_engine(build: Callable[[], T], label: str) -> T:
    """``build()`` (``vllm.LLM(...)``), its output teed; a failure is a
    ``UserError``: "vllm: the engine for LABEL did not start: REASON"."""
    tee = OutputTee()
    try:
        return build()
    except Exception as exc:  # every start failure ends the run with its reason
        tee.restore()
        reason = root_cause(exc, tee.text(wait=DRAIN_SECONDS))
        raise UserError(f"vllm: the engine for {label} did not start: {reason}{_hint(reason)}") from None
    finally:
        tee.restore()


def root_cause(exc: BaseException, log: str) -> str:
    """One line: the first exception in ``exc``'s chain that says a reason
    (not "see root cause above"), else the first exception line of
    ``log`` that does, else ``exc`` as it is."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        message = _message(current)
        if message and not _pointer(message):
            return _one_line(f"{type(current).__name__}: {message}")
        current = current.__cause__ or current.__context__
    for line in log.splitlines():
        found = _RAISED.match(_LOG_PREFIX.sub("", _ANSI.sub("", line)).strip())
        if found and not _pointer(found.group(2)):
            return _one_line(f"{found.group(1)}: {found.group(2)}")
    return _one_line(f"{type(exc).__name__}: {exc}")


def _message(exc: BaseException) -> str:
    """An exception's reason; pydantic's ``ValidationError`` (vLLM's
    settings) by its errors' messages."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        try:
            return "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in errors())
        except Exception:  # noqa: BLE001 - not pydantic's after all: its text
            pass
    return str(exc)


def _pointer(message: str) -> bool:
    """A message that only points at the log ("See root cause above")."""
    lowered = message.lower()
    return any(p in lowered for p in _POINTERS)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LONGEST_REASON else text[: LONGEST_REASON - 3] + "..."


def _hint(reason: str) -> str:
    """Where avhb takes the setting vLLM's reason names."""
    lowered = reason.lower()
    if "gpu-memory-utilization" in lowered or "gpu_memory_utilization" in lowered:
        return " (avhb: the model argument gpu_memory_utilization, e.g. --model vllm:NAME,gpu_memory_utilization=0.5)"
    if "max_model_len" in lowered:
        return " (avhb: the model argument max_model_len, e.g. --model vllm:NAME,max_model_len=4096)"
    return ""
