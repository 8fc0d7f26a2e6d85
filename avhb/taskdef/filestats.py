"""One look at a file per index build: ``[mtime_ns, size]`` of a regular
file, None when there is none.  Shared by the index (its task files and
the dependencies it recorded) and the resolver (the bases, hook modules and
prompt files it reads), so a file is judged by one look."""
from __future__ import annotations

import os
import stat


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
