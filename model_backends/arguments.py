"""The check every built-in backend makes of its model arguments against
its declaration (``Backend.arguments``: each name with its type, default
and one line, :class:`avhb.Argument`), so that a misspelt argument is an
error naming the known ones, ``avhb list backends`` prints the same ones
with their lines and docs/backends.md is made from them."""
from __future__ import annotations

from typing import Iterable, Mapping

from avhb import Argument, BackendSpec, UserError


def check_arguments(spec: BackendSpec, arguments: Mapping[str, Argument], *, also: Iterable[str] = (),
                    hint: str = "") -> None:
    """``UserError`` naming every argument of ``spec`` that ``arguments``
    (nor ``also``) declares, and the ones it does."""
    unknown = sorted(set(spec.args) - set(arguments) - set(also))
    if unknown:
        raise UserError(f"{spec.kind} backend: unknown argument(s) {', '.join(unknown)} "
                        f"(known: {', '.join(sorted(arguments))}; `avhb list backends` says what each does){hint}")

