"""The task JSON Schema compiled once into plain Python checks.

``compile_schema(schema)`` returns ``check(instance) -> bool``: True means
valid under JSON Schema 2020-12; False means invalid *or not sure* (an enum
or uniqueItems over values other than strings, where JSON's equality differs
from Python's).  It only answers yes or no: on False the caller asks
jsonschema, which stays the one authority and writes the message.  A schema
keyword this module does not know raises ``Unsupported`` at compile time, so
the caller falls back to jsonschema for every document rather than skip a
rule.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# keywords that never affect validity
_ANNOTATIONS = {"$schema", "$comment", "$defs", "title", "description", "default", "examples",
                "deprecated", "readOnly", "writeOnly", "format"}  # format: an annotation unless a format checker is asked for


class Unsupported(Exception):
    """The schema uses a keyword this checker does not implement."""


class _Unsure(Exception):
    """A value this checker cannot judge exactly; jsonschema decides."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": lambda x: (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer()),
}


def compile_schema(schema: dict[str, Any]) -> Check:
    compiler = _Compiler(schema)
    inner = compiler.compile(schema)

    def check(instance: Any) -> bool:
        try:
            return inner(instance)
        except (_Unsure, RecursionError):
            return False

    return check


class _Compiler:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda x: True
        if schema is False:
            return lambda x: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        if "$id" in schema and schema is not self.root:
            raise Unsupported("$id below the root (it would move reference resolution)")
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key == "$id" or key in ("additionalProperties", "maxItems", "maximum", "exclusiveMaximum", "maxLength"):
                continue  # additionalProperties goes with properties; the max* with their min*
            make = getattr(self, "_kw_" + key.lstrip("$"), None)
            if make is None:
                raise Unsupported(f"keyword {key!r}")
            checks.append(make(value, schema))
        if "additionalProperties" in schema and "properties" not in schema:
            checks.append(self._kw_properties({}, schema))
        for lo, hi in (("minItems", "maxItems"), ("minimum", "maximum"), ("exclusiveMinimum", "exclusiveMaximum"),
                       ("minLength", "maxLength")):
            if hi in schema and lo not in schema:
                checks.append(getattr(self, "_kw_" + lo)(None, schema))
        if not checks:
            return lambda x: True
        if len(checks) == 1:
            return checks[0]
        return lambda x: all(c(x) for c in checks)

    # --- keywords -------------------------------------------------------
    def _kw_ref(self, ref: str, _schema) -> Check:
        if not ref.startswith("#/"):
            raise Unsupported(f"$ref {ref!r} (only local references)")
        if ref not in self.refs:
            self.refs[ref] = lambda x: target(x)  # placeholder for recursive references
            node: Any = self.root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    raise Unsupported(f"$ref {ref!r} does not resolve")
                node = node[part]
            target = self.compile(node)
            self.refs[ref] = target
        return self.refs[ref]

    def _kw_type(self, value, _schema) -> Check:
        names = [value] if isinstance(value, str) else list(value)
        if not all(n in _TYPES for n in names):
            raise Unsupported(f"type {value!r}")
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        return lambda x: any(t(x) for t in tests)

    def _kw_enum(self, values, _schema) -> Check:
        if not all(isinstance(v, str) for v in values):
            raise Unsupported("enum over non-string values")
        allowed = frozenset(values)

        def check(x):
            if isinstance(x, str):
                return x in allowed
            if isinstance(x, (dict, list, bool, int, float)) or x is None:
                return False  # no string equals these under JSON equality either
            raise _Unsure
        return check

    def _kw_const(self, value, _schema) -> Check:
        if not isinstance(value, str):
            raise Unsupported("const of a non-string")

        def check(x):
            if isinstance(x, str):
                return x == value
            if isinstance(x, (dict, list, bool, int, float)) or x is None:
                return False
            raise _Unsure
        return check

    def _kw_properties(self, props, schema) -> Check:
        compiled = {k: self.compile(v) for k, v in props.items()}
        additional = schema.get("additionalProperties", True)
        extra: Check | None = None if additional is True else self.compile(additional)

        def check(x):
            if not isinstance(x, dict):
                return True
            for k, v in x.items():
                c = compiled.get(k) if isinstance(k, str) else None
                if c is not None:
                    if not c(v):
                        return False
                elif extra is not None and not extra(v):
                    return False
            return True
        return check

    def _kw_required(self, names, _schema) -> Check:
        names = list(names)
        return lambda x: not isinstance(x, dict) or all(n in x for n in names)

    def _kw_items(self, items, _schema) -> Check:
        if not isinstance(items, (dict, bool)):
            raise Unsupported("items as a list (use prefixItems)")
        each = self.compile(items)
        return lambda x: not isinstance(x, list) or all(each(v) for v in x)

    def _kw_minItems(self, _value, schema) -> Check:
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        return lambda x: not isinstance(x, list) or (len(x) >= lo and (hi is None or len(x) <= hi))

    def _kw_uniqueItems(self, value, _schema) -> Check:
        if not value:
            return lambda x: True

        def check(x):
            if not isinstance(x, list):
                return True
            if not all(isinstance(v, str) for v in x):
                raise _Unsure
            return len(set(x)) == len(x)
        return check

    def _kw_minLength(self, _value, schema) -> Check:
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        return lambda x: not isinstance(x, str) or (len(x) >= lo and (hi is None or len(x) <= hi))

    def _kw_pattern(self, pattern, _schema) -> Check:
        search = re.compile(pattern).search
        return lambda x: not isinstance(x, str) or search(x) is not None

    def _bounds(self, schema) -> Check:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")

        def check(x):
            if not _is_number(x):
                return True
            return ((lo is None or x >= lo) and (hi is None or x <= hi)
                    and (xlo is None or x > xlo) and (xhi is None or x < xhi))
        return check

    def _kw_minimum(self, _value, schema) -> Check:
        return self._bounds(schema)

    def _kw_exclusiveMinimum(self, _value, schema) -> Check:
        if "minimum" in schema:
            return lambda x: True  # checked with minimum
        return self._bounds(schema)

    def _kw_oneOf(self, subs, _schema) -> Check:
        compiled = [self.compile(s) for s in subs]
        return lambda x: sum(1 for c in compiled if c(x)) == 1

    def _kw_anyOf(self, subs, _schema) -> Check:
        compiled = [self.compile(s) for s in subs]
        return lambda x: any(c(x) for c in compiled)

    def _kw_allOf(self, subs, _schema) -> Check:
        compiled = [self.compile(s) for s in subs]
        return lambda x: all(c(x) for c in compiled)

    def _kw_not(self, sub, _schema) -> Check:
        inner = self.compile(sub)
        return lambda x: not inner(x)
