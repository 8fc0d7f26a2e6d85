"""One look at a file per index build: ``FileStats``, ``[mtime_ns, size]``
of a regular file, None when there is none, shared by the index (its task
files and the dependencies it recorded) and the resolver (the bases, hook
modules and prompt files it reads), so a file is judged by one look; and
``Sources``, what the resolver read from each file, read once."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any


class FileStats:
    def __init__(self) -> None:
        self.seen: dict[str, list[int] | None] = {}

    def __call__(self, path: str) -> list[int] | None:
        seen = self.seen
        if path not in seen:
            try:
                st = os.stat(path)
                seen[path] = [st.st_mtime_ns, st.st_size] if stat.S_ISREG(st.st_mode) else None
            except OSError:
                seen[path] = None
        return seen[path]


class Sources:
    """The files one index build reads: each include base parsed and
    validated once, each hook module's top-level names read (AST) once.

    ``consulted`` collects every base and hook module a resolve looked at,
    with the ``[mtime_ns, size]`` seen before reading it (None: missing):
    what the index keys a file's entry on.  The index clears it per file.
    Results are shared within one build only; without a Sources each
    resolve reads afresh."""

    def __init__(self, stats: FileStats | None = None) -> None:
        self.consulted: dict[str, list[int] | None] = {}
        self.notes: dict[str, list[str]] = {}  # file -> its notes (duplicate keys, hooks a static read cannot decide)
        self.stat = FileStats() if stats is None else stats  # shared with the index's looks
        self._once: dict[tuple, tuple[Any, dict[str, list[int] | None]]] = {}
        self._real_dirs: dict[str, str] = {}

    def note(self, path: str) -> list[int] | None:
        """Record that this resolve depends on ``path``; its stat (None: no such file)."""
        seen = self.consulted[path] = self.stat(path)
        return seen

    def once(self, key: tuple, compute):
        """``compute()`` once per build; the files it consulted are recorded
        for every later caller too.  Errors are not kept (raised afresh)."""
        hit = self._once.get(key)
        if hit is None:
            outer, self.consulted = self.consulted, {}
            try:
                hit = self._once[key] = (compute(), self.consulted)
            finally:
                outer.update(self.consulted)
                self.consulted = outer
        else:
            self.consulted.update(hit[1])
        return hit[0]

    def resolve(self, path: Path) -> Path:
        """``path.resolve()``, with each folder resolved once."""
        text = str(path)
        if not os.path.isabs(text) or f"{os.sep}..{os.sep}" in text or text.endswith(f"{os.sep}..") \
                or os.path.islink(text):
            return path.resolve()  # relative, "..", or a link: only resolve() says where it lands
        folder, name = os.path.split(text)
        real = self._real_dirs.get(folder)
        if real is None:
            real = self._real_dirs[folder] = os.path.realpath(folder)
        return Path(f"{real}{os.sep}{name}")
