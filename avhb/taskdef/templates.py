"""``{{ field }}`` templates for prompts and paths.  Substitution only: no
expressions, no attribute access, nothing executes."""
from __future__ import annotations

import re
from typing import Any, Mapping

from avhb.errors import SampleError

_FIELD = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*\}\}")


def lookup(doc: Mapping[str, Any], dotted: str) -> Any:
    value: Any = doc
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise SampleError(f"template field {dotted!r} not in the sample (keys: {', '.join(sorted(doc))[:200]})")
    return value


def render(template: str, doc: Mapping[str, Any]) -> str:
    def repl(m: re.Match) -> str:
        value = lookup(doc, m.group(1))
        return "" if value is None else str(value)

    return _FIELD.sub(repl, template)


def is_template(text: str) -> bool:
    return bool(_FIELD.search(text))
