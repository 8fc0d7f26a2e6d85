"""A run folder's whole-file JSON documents (``run.json``,
``results.json``) read back: the object, or that the file is missing, or
why it cannot be read.  Each document's module says what its readers do
with a missing or unreadable file (:mod:`avhb.runfolder.manifest`,
:mod:`avhb.runfolder.results`)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JsonFile:
    """``data``: the file's object; None with ``problem`` None when there
    is no file, with ``problem`` set when it cannot be read (``unreadable
    (REASON)``, ``not a JSON object``)."""

    path: Path
    data: dict[str, Any] | None
    problem: str | None = None

    @property
    def missing(self) -> bool:
        return self.data is None and self.problem is None


def read_json_file(path: Path) -> JsonFile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return JsonFile(path, None)
    except (OSError, UnicodeDecodeError) as exc:
        return JsonFile(path, None, f"unreadable ({exc})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        return JsonFile(path, None, f"unreadable ({exc})")
    if not isinstance(data, dict):
        return JsonFile(path, None, "not a JSON object")
    return JsonFile(path, data)
