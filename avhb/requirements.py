"""Optional packages, checked before any model call: a backend, metric or
judge that needs one declares ``requires = ((module, avhb_extra), ...)``,
and a missing one is a one-line error naming the pip command."""
from __future__ import annotations

import importlib.util
from typing import Iterable

from avhb.errors import UserError


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_requirements(what: str, requires: Iterable[tuple[str, str]]) -> None:
    """``UserError`` for the first missing package (found without importing it)."""
    for module, extra in requires:
        if not installed(module):
            raise UserError(f"{what} needs the {module!r} package, which is not installed: pip install 'avhb[{extra}]'")
