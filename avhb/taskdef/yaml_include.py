"""How one task YAML file builds on others and into several tasks: the
YAML key ``include:`` (a base file next to it, whose keys the child's
override; not ``--include_path``, which is :mod:`avhb.taskdef.include_path`)
and ``expand:`` (one task per combination of variables, ``${var}``
substituted)."""
from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.taskdef.filestats import Sources
from avhb.taskdef.schema_check import schema_errors, validate_doc
from avhb.taskdef.yaml_file import ConfigErrors, read_yaml

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def load_with_includes(path: Path, seen: tuple[Path, ...] = (), errors: list[str] | None = None, *,
                       sources: Sources | None = None) -> tuple[dict[str, Any], Mapping[tuple, int], Path]:
    """Returns the merged mapping (child keys override the included file's),
    its line map, and the file that defined each top-level key is not tracked:
    errors after merging point at the child file.  Schema errors are
    appended to ``errors`` when given (the caller goes on and reports them
    with any others), else raised as :class:`ConfigErrors`."""
    sources = Sources() if sources is None else sources
    path = sources.resolve(path)
    if path in seen:
        chain = " -> ".join(str(p.name) for p in seen + (path,))
        raise UserError(f"{seen[-1]}:1: include: cycle ({chain})")
    doc = read_yaml(path)
    if errors is None:
        validate_doc(doc)
    else:
        errors += schema_errors(doc)
    data = dict(doc.data)
    parent_name = data.pop("include", None)
    if parent_name is None:
        return data, doc.lines, path
    parent_path = (path.parent / parent_name)
    if sources.note(str(parent_path)) is None:
        raise doc.error(("include",), f"included file {parent_name!r} not found next to {path.name}")
    # an include base is read once per build, with its schema errors: a
    # memoised base never cycles back (each file has one parent, so a cycle
    # would have failed its own read)
    def read_parent() -> tuple[dict[str, Any], list[str]]:
        parent_errors: list[str] = []
        return load_with_includes(parent_path, seen + (path,), parent_errors, sources=sources)[0], parent_errors

    parent, parent_errors = sources.once(("base", str(parent_path)), read_parent)
    if parent_errors:
        if errors is None:
            raise ConfigErrors(parent_errors)
        errors += parent_errors
    merged = {**parent, **data}
    return merged, doc.lines, path


def expand_family(data: dict[str, Any]) -> list[dict[str, Any]]:
    """``expand`` -> one mapping per member, with ``${var}`` substituted."""
    spec = data.get("expand")
    if not spec:
        return [data]
    if isinstance(spec, dict):
        keys = list(spec)
        combos = [dict(zip(keys, values)) for values in itertools.product(*(spec[k] for k in keys))]
    else:
        combos = [dict(c) for c in spec]
    body = {k: v for k, v in data.items() if k != "expand"}
    return [_substitute(body, {k: str(v) for k, v in combo.items()}) for combo in combos]


def _substitute(value: Any, variables: dict[str, str]) -> Any:
    """A new copy of ``value`` with ``${var}`` replaced (members share no mutable part)."""
    if isinstance(value, str):
        if "${" not in value:
            return value

        def repl(m: re.Match) -> str:
            if m.group(1) not in variables:
                raise UserError(f"expand: variable ${{{m.group(1)}}} is not declared")
            return variables[m.group(1)]
        return _VAR.sub(repl, value)
    if isinstance(value, dict):
        return {_substitute(k, variables): _substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return copy.deepcopy(value)
