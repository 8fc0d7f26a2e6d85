"""Opening media files: every failure becomes a ``SampleError`` naming the file."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from avhb.errors import SampleError


def fail(path: str, reason: str) -> SampleError:
    """The error for one bad media file: ``"<path>: <reason>"``."""
    return SampleError(f"{path}: {reason}")


def check_file(path: str) -> None:
    """Raise ``SampleError`` if ``path`` is missing, not a file, or empty."""
    if not os.path.exists(path):
        raise fail(path, "file not found")
    if not os.path.isfile(path):
        raise fail(path, "not a regular file")
    if os.path.getsize(path) == 0:
        raise fail(path, "empty file (0 bytes)")


def describe(exc: BaseException) -> str:
    """A readable reason from an FFmpeg/decoder exception."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def open_container(path: str):
    """``av.open(path)`` for reading, with bad files reported as ``SampleError``."""
    import av

    check_file(path)
    try:
        return av.open(path, "r")
    except av.error.FFmpegError as exc:
        raise fail(path, f"cannot open container (corrupt or truncated?): {describe(exc)}") from exc
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise fail(path, f"cannot open: {describe(exc)}") from exc


@contextmanager
def decoding(path: str, what: str) -> Iterator[None]:
    """Turn decoder exceptions raised inside the block into ``SampleError``."""
    import av

    try:
        yield
    except SampleError:
        raise
    except av.error.FFmpegError as exc:
        raise fail(path, f"error while decoding {what} (corrupt or truncated?): {describe(exc)}") from exc
    except (OSError, ValueError, RuntimeError, EOFError) as exc:
        raise fail(path, f"error while decoding {what}: {describe(exc)}") from exc
