"""Task YAML read safely, with line numbers: PyYAML's safe loader (libyaml
when built with it) plus lm-eval's ``!function mod.fn`` (kept as data), and
each key path's line worked out only when a message needs one (the text is
re-parsed with marks).  A key given twice in one mapping keeps its last
value, as PyYAML (and so lm-eval and lmms-eval) reads it, with one note per
file naming the keys and lines.  ``ConfigErrors``: every problem of one task
file, raised together."""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from avhb.errors import UserError


class _DuplicateKeys:
    """Records every key a mapping gives twice (``self.duplicates``: key,
    first line, repeated line); the last value is kept, as PyYAML keeps it.
    Both loaders have node marks."""

    duplicates: list[tuple[str, int, int]]

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = key_node.value
                line = key_node.start_mark.line + 1
                if key in seen:
                    self.__dict__.setdefault("duplicates", []).append((str(key), seen[key], line))
                seen[key] = line
        # a mixin: construct_mapping is the loader's it is mixed into (_Loader, _FastLoader)
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc, unused-ignore]


class _Loader(_DuplicateKeys, yaml.SafeLoader):
    """SafeLoader plus lm-eval's ``!function mod.fn`` (kept as data); the
    pure-Python loader, which keeps line marks: used for messages."""


# the base is CSafeLoader when PyYAML was built with libyaml (known only at run time: a dynamic base)
class _FastLoader(_DuplicateKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc, unused-ignore]
    """The same constructors over the C parser (node marks carry lines, but no
    line map is built: LineMap works it out when a message needs it)."""


class FunctionRef(dict):
    """What ``!function module.fn`` reads as: ``{"function": "module.fn"}``
    (a plain mapping everywhere; the type tells a tag from a metric entry
    written ``function: module.Class``, so a hook inherited from a base in
    another folder can be re-anchored, see yaml_include)."""


def _function_tag(loader, node):
    return FunctionRef(function=str(loader.construct_scalar(node)).strip())


_Loader.add_constructor("!function", _function_tag)
_FastLoader.add_constructor("!function", _function_tag)


class LineMap(Mapping):
    """Key path -> 1-based line of one YAML text, worked out on first use by
    re-parsing the text with marks (the fast loader keeps none)."""

    __slots__ = ("_text", "_map")

    def __init__(self, text: str):
        self._text: str | None = text
        self._map: dict[tuple, int] | None = None

    def _lines(self) -> dict[tuple, int]:
        if self._map is None:
            assert self._text is not None  # dropped only once the map is built
            loader = _Loader(self._text)
            try:
                node = loader.get_single_node()
                self._map = _linemap(node) if node is not None else {}
            except yaml.YAMLError:
                self._map = {}
            finally:
                loader.dispose()
            self._text = None
        return self._map

    def __getitem__(self, keypath: tuple) -> int:
        return self._lines()[keypath]

    def __contains__(self, keypath: object) -> bool:
        return keypath in self._lines()

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._lines())

    def __len__(self) -> int:
        return len(self._lines())


@dataclass
class YamlDoc:
    path: Path
    data: dict[str, Any]
    lines: Mapping[tuple, int]  # key path -> 1-based line (a LineMap: computed when asked)
    notes: list[str] = field(default_factory=list)  # what the file does that works but deserves a word

    def line(self, keypath: tuple) -> int:
        while keypath and keypath not in self.lines:
            keypath = keypath[:-1]
        return self.lines.get(keypath, 1)

    def error(self, keypath: tuple, message: str) -> UserError:
        key = ".".join(str(k) for k in keypath) or "(top level)"
        return UserError(f"{self.path}:{self.line(keypath)}: {key}: {message}")

    def note(self, keypath: tuple, message: str) -> str:
        """A note's line: ``file:line: note: key: message``."""
        key = ".".join(str(k) for k in keypath) or "(top level)"
        return f"{self.path}:{self.line(keypath)}: note: {key}: {message}"


def _linemap(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            out[path + (key,)] = key_node.start_mark.line + 1
            _linemap(value_node, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _linemap(item, path + (i,), out)
    return out


def read_yaml(path: Path) -> YamlDoc:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    loader = _FastLoader(text)
    try:
        data = loader.get_single_data()
        duplicates = loader.__dict__.get("duplicates", [])
    except yaml.YAMLError:
        data = _load_marked(path, text)  # the message and line of the marked parse
        duplicates = []
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: a task file must be a mapping of keys to values")
    notes = []
    if duplicates:
        given = ", ".join(f"{key!r} (lines {first} and {again})" for key, first, again in duplicates)
        notes.append(f"{path}:{duplicates[0][2]}: note: keys given twice in one mapping: {given}; the last value "
                     "of each is used, as PyYAML (and lm-eval) reads it")
    return YamlDoc(path, data, LineMap(text), notes)


def _load_marked(path: Path, text: str) -> Any:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise UserError(f"{path}:{line}: YAML error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}:1: YAML error: {exc}") from None
    finally:
        loader.dispose()


class ConfigErrors(UserError):
    """Every problem found in one task file (``messages``); its text lists
    them on one line (:func:`listed`)."""

    def __init__(self, messages: list[str]):
        self.messages = list(dict.fromkeys(messages))
        super().__init__(listed(self.messages))


SHOWN_ERRORS = 3  # a file's errors one message lists before it counts the rest
_WHERE = re.compile(r"(.+?):(\d+): ")


def listed(messages: list[str]) -> str:
    """A file's errors on one line: each of them, or the first
    :data:`SHOWN_ERRORS` and how many there are in all; after the first, a
    message about the same file names only its line
    (``t.yaml:3: a: bad; line 5: b: bad``)."""
    first = _WHERE.match(messages[0])
    shown = [messages[0]]
    for message in messages[1:SHOWN_ERRORS]:
        where = _WHERE.match(message)
        same_file = first is not None and where is not None and where[1] == first[1]
        shown.append(f"line {where[2]}: {message[where.end():]}" if same_file and where else message)
    rest = len(messages) - len(shown)
    file = first[1] if first is not None else "FILE"
    return "; ".join(shown) + (f" (and {rest} more, {len(messages)} in all: `avhb validate {file}` lists them)"
                               if rest else "")
