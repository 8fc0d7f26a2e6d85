"""JSON text exactly as ``json.dumps`` writes it, with its encoder built once.

``json.dumps`` builds a new C encoder for every call (a new dict that
watches for circular references among its arguments): for the short lines
a run writes per sample (the journal's, the samples file's, a call key's
payload) that costs as much as the encoding.  :func:`dumps` keeps one
encoder per set of options and writes the same text; a circular structure,
which the kept encoder does not watch for, is handed to ``json.dumps``
itself and raises the ``ValueError`` it always raised.
"""
from __future__ import annotations

import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, Callable

_make_encoder: Any
try:
    from _json import make_encoder as _make_encoder
except ImportError:  # an interpreter without json's C accelerator: json.dumps, as it is
    _make_encoder = None

_ENCODERS: dict[tuple[bool, bool, Any], Callable[[Any, int], Any]] = {}


def dumps(obj: Any, *, sort_keys: bool = False, ensure_ascii: bool = True,
          default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(obj, sort_keys=..., ensure_ascii=..., default=...)``."""
    if _make_encoder is None:
        return json.dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=default)
    options = (sort_keys, ensure_ascii, default)
    encode = _ENCODERS.get(options)
    if encode is None:
        encode = _ENCODERS[options] = _make_encoder(
            None, default or _not_serializable, encode_basestring_ascii if ensure_ascii else encode_basestring,
            None, ": ", ", ", sort_keys, False, True)
    try:
        return "".join(encode(obj, 0))
    except RecursionError:  # deep, or circular: json.dumps says which
        return json.dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=default)


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
