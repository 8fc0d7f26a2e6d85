"""A task file checked against the JSON Schema (``schema/task.schema.json``):
compiled once into plain checks (:mod:`avhb.taskdef.schema_compiled`) that pass a
valid file fast; a failing one goes through jsonschema, which writes the
messages, each naming file, line and key.  lm-eval keys avhb does not use
are named with why (``LM_EVAL_ONLY``)."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from avhb.taskdef.yaml_file import ConfigErrors, YamlDoc

SCHEMA_FILE = Path(__file__).parent / "schema" / "task.schema.json"


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(_schema())


@functools.lru_cache(maxsize=1)
def _fast_check():
    """The schema as plain checks (None: it uses a keyword the checker lacks,
    so jsonschema checks every document)."""
    from avhb.taskdef.schema_compiled import Unsupported, compile_schema

    try:
        return compile_schema(_schema())
    except Unsupported:
        return None


# lm-eval and lmms-eval task keys avhb does not implement: named, so a copied file says why
LM_EVAL_ONLY: dict[str, str] = {}


def schema_errors(doc: YamlDoc) -> list[str]:
    """Every schema error of a file, each naming file, line and key, in
    line order.  The compiled checks pass a valid file; only a failing one
    goes through jsonschema, which writes the messages."""
    data = _set_keys(doc.data)
    check = _fast_check()
    if check is not None and check(data):
        return []
    errors = sorted(_validator().iter_errors(data), key=lambda e: (doc.line(tuple(e.absolute_path)), list(e.absolute_path)))
    out: list[str] = []
    for err in errors:
        keypath = tuple(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            for key in extra:
                why = LM_EVAL_ONLY.get(key) if not keypath else None
                hint = f" (an lm-eval key avhb does not use: {why})" if why else ""
                out.append(str(doc.error(keypath + (key,), f"unknown key {key!r}{hint}")))
            if extra:
                continue
        best = err
        if err.context:  # oneOf: report the most specific alternative
            best = max(err.context, key=lambda e: len(e.absolute_path))
            keypath = tuple(best.absolute_path)
        out.append(str(doc.error(keypath, _short(best))))
    return out


def _set_keys(data: dict[str, Any]) -> dict[str, Any]:
    """The keys the file sets: a top-level (or fewshot_config) key written
    ``null`` is unset, as lm-eval reads it (the schema checks the others)."""
    if all(v is not None for v in data.values()) and not isinstance(data.get("fewshot_config"), dict):
        return data
    out = {k: v for k, v in data.items() if v is not None}
    if isinstance(out.get("fewshot_config"), dict):
        out["fewshot_config"] = {k: v for k, v in out["fewshot_config"].items() if v is not None}
    return out


def validate_doc(doc: YamlDoc) -> None:
    """Raise :class:`ConfigErrors` (every schema error, each naming file,
    line and key) when the file does not match the schema."""
    errors = schema_errors(doc)
    if errors:
        raise ConfigErrors(errors)


def _short(err) -> str:
    if err.validator == "type":
        return f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"[:200]
    if err.validator == "enum":
        return f"must be one of {err.validator_value}, got {err.instance!r}"
    return err.message[:200]
