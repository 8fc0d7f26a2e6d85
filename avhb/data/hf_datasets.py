"""The ``datasets`` library as avhb uses it: imported offline and quiet."""
from __future__ import annotations

import os
from typing import Any


def offline_datasets() -> Any:
    """``import datasets`` with ``HF_DATASETS_OFFLINE`` set (unless the
    environment says otherwise) and its progress bars and logging off."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # read at import: set before it
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # "Generating split" bars are not avhb's output
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def first_line(exc: BaseException) -> str:
    """An exception's first line (300 characters at most), for a one-line message."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
