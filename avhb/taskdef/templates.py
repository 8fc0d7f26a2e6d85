"""Templates for prompts, targets, choices and media paths: Jinja2, the
language lm-eval and lmms-eval task files are written in, in a sandbox.

* Rendering uses :class:`jinja2.sandbox.SandboxedEnvironment` with
  ``StrictUndefined``: expressions and filters work
  (``{{question.strip()}}``, ``{{options[0]}}``, ``{{text | trim}}``,
  lm-eval's ``regex_replace`` filter), attributes starting with ``_``
  (``__class__``, ``__globals__``...) are refused, and there is no loader:
  ``{% include %}`` / ``{% import %}`` / ``{% extends %}`` reach nothing.
  Plain ``{{field}}`` / ``{{a.b}}`` / ``{{a.0}}`` templates are Jinja2
  too (``None`` renders as the empty string).
* :func:`check_template` is the validate-time check (``avhb validate`` and
  the index build): the template parses, and its source names no
  ``_``-attribute and no loader statement.  It needs no sample.
* A field the sample lacks is a :class:`~avhb.errors.SampleError` naming the
  sample and the field: that sample fails, the run goes on.
* Plain ``{{ field }}`` / ``{{ a.b.0 }}`` templates (most prompts) are filled
  in directly, with Jinja's result (a test holds the two paths equal); any
  other value or markup goes through Jinja.

Nothing here executes code from a task file: a template is data that the
sandbox evaluates over the sample's fields.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Mapping

from avhb.errors import SampleError

_PLAIN_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$")
_LOADER_NODES = ("Include", "Import", "FromImport", "Extends")


def _regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    """lm-eval's ``regex_replace`` filter."""
    return re.sub(pattern, repl, string, count=count)


@functools.lru_cache(maxsize=1)
def environment():
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False,
                               finalize=lambda value: "" if value is None else value)
    env.filters["regex_replace"] = _regex_replace
    return env


@functools.lru_cache(maxsize=4096)
def _compiled(source: str):
    return environment().from_string(source)


def is_template(text: Any) -> bool:
    """Whether ``text`` holds Jinja2 markup (``{{ }}``, ``{% %}``, ``{# #}``)."""
    return isinstance(text, str) and ("{{" in text or "{%" in text or "{#" in text)


def is_field_name(text: Any) -> bool:
    """A bare (dotted) field name such as ``answer`` or ``meta.label``."""
    return isinstance(text, str) and _is_field_name(text)


@functools.lru_cache(maxsize=4096)  # asked of a task's few settings for every sample
def _is_field_name(text: str) -> bool:
    return bool(_PLAIN_FIELD.match(text))


def check_template(source: str) -> str | None:
    """Why ``source`` is not an acceptable template (None when it is):
    a syntax error, an attribute starting with ``_`` (what a sandbox escape
    reaches for: ``__class__``, ``__globals__``, ``_private``), or a loader
    statement.  Reads the template's syntax tree; renders nothing.  Text
    whose only markup is plain field outputs is accepted without parsing
    (most prompts: the task index checks thousands)."""
    if _plain_pieces(source) is not None:  # the same test rendering uses
        return None
    return _check_parsed(source)


@functools.lru_cache(maxsize=4096)
def _check_parsed(source: str) -> str | None:
    from jinja2 import nodes
    from jinja2.exceptions import TemplateSyntaxError

    try:
        tree = environment().parse(source)
    except TemplateSyntaxError as exc:
        return f"template syntax error at template line {exc.lineno}: {exc.message}"
    hidden: list[str] = []
    env = environment()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Test,
                               *(getattr(nodes, n) for n in _LOADER_NODES))):
        if type(node).__name__ in _LOADER_NODES:
            return f"template uses {{% {type(node).__name__.lower()} %}}: templates cannot load other files"
        if isinstance(node, (nodes.Filter, nodes.Test)):  # unknown ones fail only when compiled: every sample
            kind, known = ("filter", env.filters) if isinstance(node, nodes.Filter) else ("test", env.tests)
            if node.name not in known:
                import difflib

                close = difflib.get_close_matches(node.name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (see the Jinja2 {kind} list)"
                return f"template uses unknown {kind} {node.name!r}{hint}"
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args and isinstance(node.args[0], nodes.Const):
            name = node.args[0].value
        else:
            continue
        if isinstance(name, str) and name.startswith("_"):
            hidden.append(name)
    if hidden:
        names = sorted(set(hidden), key=lambda n: (source.find(n), n))
        return (f"template reaches attribute {', '.join(map(repr, names))}: "
                "attributes starting with '_' are not allowed")
    return None


def render(template: str, doc: Mapping[str, Any], sample: str | None = None, where: str = "template",
           trailing_newline: bool = True) -> str:
    """``template`` rendered over the sample's fields.  ``sample`` (its id)
    and ``where`` (the YAML key) name the failure: a field the sample lacks,
    a refused attribute or any error inside an expression is a
    ``SampleError``.  ``trailing_newline=False``: the template's last
    newline is dropped, as Jinja's default environment (lmms-eval's) does."""
    if not trailing_newline and template.endswith("\n"):
        template = template[:-2] if template.endswith("\r\n") else template[:-1]
    if not is_template(template):
        return template
    pieces = _plain_pieces(template)
    if pieces is not None:
        text = _render_plain(pieces, doc)
        if text is not None:
            return text
    from jinja2.exceptions import SecurityError, TemplateError, UndefinedError

    who = f"sample {sample}: " if sample is not None else ""
    try:
        compiled = _compiled(template)
    except TemplateError as exc:
        raise SampleError(f"{who}{where}: {exc}") from None
    try:
        return compiled.render(dict(doc))
    except UndefinedError as exc:
        raise SampleError(f"{who}{where}: template {_undefined(exc)} not in the sample ("
                          f"fields: {', '.join(sorted(map(str, doc)))[:200]})") from None
    except SecurityError as exc:
        raise SampleError(f"{who}{where}: template refused by the sandbox: {exc}") from None
    except (TemplateError, TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError) as exc:
        raise SampleError(f"{who}{where}: template failed: {type(exc).__name__}: {exc}") from None


_PLAIN_PIECE = re.compile(r"(?<!\{)\{\{ *([A-Za-z][A-Za-z0-9_]*(?:\.(?:0|[1-9][0-9]*|[A-Za-z][A-Za-z0-9_]*))*) *\}\}")


@functools.lru_cache(maxsize=4096)
def _plain_pieces(source: str) -> tuple[tuple[str, tuple[str, ...] | None], ...] | None:
    """``source`` as (literal text, field path) pieces when its only markup
    is plain ``{{ field }}`` outputs (most prompts), else None."""
    pieces: list[tuple[str, tuple[str, ...] | None]] = []
    at = 0
    for m in _PLAIN_PIECE.finditer(source):
        pieces.append((source[at:m.start()], tuple(m.group(1).split("."))))
        at = m.end()
    pieces.append((source[at:], None))
    if any(mark in text for text, _ in pieces for mark in ("{{", "{%", "{#")) or ("not",) in (p for _, p in pieces):
        return None  # other markup, or the keyword ``not`` (a syntax error for Jinja)
    return tuple(pieces)


def _render_plain(pieces, doc: Mapping[str, Any]) -> str | None:
    """What Jinja renders for plain-output pieces, or None whenever a value
    is not a plain mapping entry or list item (Jinja then renders it, and
    writes the error): a dict's own attribute names (``items``, ``keys``)
    and non-container values go the long way, so both paths agree."""
    out: list[str] = []
    for text, path in pieces:
        out.append(text)
        if path is None:
            continue
        if not isinstance(doc, dict) or path[0] not in doc:
            return None
        value = doc[path[0]]
        for part in path[1:]:
            if part.isdigit():
                if type(value) not in (list, tuple) or int(part) >= len(value):
                    return None
                value = value[int(part)]
            elif type(value) is dict and part in value and not hasattr(dict, part):
                value = value[part]
            else:
                return None
        if value is None:
            continue
        if type(value) not in (str, int, float, bool, list, dict):
            return None
        out.append(value if type(value) is str else str(value))
    if len(out) == 3 and not out[0] and not out[2]:  # "{{ field }}" alone: the value's own string, not a copy
        return out[1]
    return "".join(out)


def _undefined(exc: Exception) -> str:
    """Jinja's "'x' is undefined" / "'dict object' has no attribute 'y'",
    said as the field that is missing."""
    text = str(exc)
    m = re.fullmatch(r"'([^']*)' is undefined", text) or re.fullmatch(r"'\w+ object' has no attribute '([^']*)'", text)
    return f"field '{m.group(1)}'" if m else text


def lookup(doc: Mapping[str, Any], dotted: str, sample: str | None = None) -> Any:
    """The value of a (dotted) field: ``a.b`` goes into mappings, ``a.0``
    into lists.  A ``SampleError`` naming the sample and field when absent."""
    if type(doc) is dict and dotted in doc and "." not in dotted:  # a plain field: what the loop below finds
        return doc[dotted]
    value: Any = doc
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            who = f"sample {sample}: " if sample is not None else ""
            raise SampleError(f"{who}field {dotted!r} not in the sample (fields: {', '.join(sorted(map(str, doc)))[:200]})")
    return value
