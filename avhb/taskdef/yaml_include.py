"""How one task YAML file builds on others and into several tasks: the
YAML key ``include:`` (a base file next to it, whose keys the child's
override; not ``--include_path``, which is :mod:`avhb.taskdef.include_path`)
and ``expand:`` (one task per combination of variables, ``${var}``
substituted)."""
from __future__ import annotations

import copy
import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.taskdef.filestats import Sources
from avhb.taskdef.schema_check import schema_errors, validate_doc
from avhb.taskdef.yaml_file import ConfigErrors, FunctionRef, read_yaml

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
    if doc.notes:
        sources.notes[str(path)] = doc.notes
    if errors is None:
        validate_doc(doc)
    else:
        errors += schema_errors(doc)
    data = dict(doc.data)
    included = data.pop("include", None)
    if included is None:
        return data, doc.lines, path
    merged: dict[str, Any] = {}
    # lm-eval's rule: each base in order (a later one's keys win), then this file's keys
    for parent_name in included if isinstance(included, list) else [included]:
        if not isinstance(parent_name, str):
            continue  # the schema error says why
        parent_path = (path.parent / parent_name)
        if sources.note(str(parent_path)) is None:
            raise doc.error(("include",), f"included file {parent_name!r} not found next to {path.name}")
        parent, parent_errors = sources.once(("base", str(parent_path)),
                                             lambda: _read_base(parent_path, seen + (path,), sources))
        if parent_errors:
            if errors is None:
                raise ConfigErrors(parent_errors)
            errors += parent_errors
        parent = dict(parent)
        parent.pop("task_list", None)  # lm-eval: a base's task_list defines tasks of that file only
        if sources.resolve(parent_path).parent != path.parent:
            parent = reanchor(parent, sources.resolve(parent_path).parent, path.parent)
        merged.update(parent)
    merged.update(data)
    return merged, doc.lines, path


def _read_base(parent_path: Path, seen: tuple[Path, ...], sources: Sources) -> tuple[dict[str, Any], list[str]]:
    """An include base, read once per build with its schema errors (a
    memoised base never cycles back: each file's bases are read before it)."""
    parent_errors: list[str] = []
    return load_with_includes(parent_path, seen, parent_errors, sources=sources)[0], parent_errors


def reanchor(value: Any, base_dir: Path, child_dir: Path) -> Any:
    """A base's ``!function`` hooks, written relative to the base's folder,
    made relative to the child's: ``utils.fn`` in ``../_t.yaml`` becomes
    ``../utils.fn`` (lm-eval resolves a tag against the file it is written
    in).  A hook the child's own folder also has keeps its name only when
    the base sits in the same folder."""
    if isinstance(value, FunctionRef):
        dotted = str(value.get("function", ""))
        folder, _, rest = dotted.rpartition("/")
        target = (base_dir / folder) if folder else base_dir
        rel = os.path.relpath(target, child_dir).replace(os.sep, "/")
        return FunctionRef(function=rest if rel == "." else f"{rel}/{rest}")
    if isinstance(value, dict):
        return {k: reanchor(v, base_dir, child_dir) for k, v in value.items()}
    if isinstance(value, list):
        return [reanchor(v, base_dir, child_dir) for v in value]
    return value


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
    if isinstance(value, FunctionRef):
        return FunctionRef({_substitute(k, variables): _substitute(v, variables) for k, v in value.items()})
    if isinstance(value, dict):
        return {_substitute(k, variables): _substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return copy.deepcopy(value)
