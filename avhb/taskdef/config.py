"""Reading task YAML: safe loading with line numbers, JSON Schema validation,
``include`` inheritance and family expansion.  Never executes code: hooks are
recorded as dotted paths and checked by reading the module's source (AST).

Fast by construction: YAML is read with the C loader and line numbers are
worked out only when a message needs one (the text is re-parsed with marks);
the schema is compiled once into plain checks (jsonschema writes the message
when a document fails); a ``Sources`` shared by one index build reads each
include base and each hook module once."""
from __future__ import annotations

import ast
import copy
import functools
import itertools
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from avhb.errors import UserError

SCHEMA_FILE = Path(__file__).parent / "schema" / "task.schema.json"
HOOK_KEYS = ("data_loader", "process_docs", "doc_to_messages", "driver", "doc_to_text", "doc_to_target", "doc_to_choice")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Loader(yaml.SafeLoader):
    """SafeLoader plus lm-eval's ``!function mod.fn`` (kept as data); the
    pure-Python loader, which keeps line marks: used for messages."""


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when PyYAML was built with it
    """The same constructors over the C parser: no marks kept."""


def _function_tag(loader, node):
    return {"function": loader.construct_scalar(node)}


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

    def line(self, keypath: tuple) -> int:
        while keypath and keypath not in self.lines:
            keypath = keypath[:-1]
        return self.lines.get(keypath, 1)

    def error(self, keypath: tuple, message: str) -> UserError:
        key = ".".join(str(k) for k in keypath) or "(top level)"
        return UserError(f"{self.path}:{self.line(keypath)}: {key}: {message}")


@dataclass
class TaskConfig:
    """A fully resolved task: includes merged, family variables substituted."""

    name: str  # public name (namespaced for third-party packs)
    file: Path
    package: str  # the Python package that ships the YAML; hooks resolve inside it
    benchmark: str  # the task pack folder name, e.g. "curve"
    config: dict[str, Any]
    lines: Mapping[tuple, int] = field(default_factory=dict, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    def hook_path(self, dotted: str) -> str:
        return hook_import_path(self.package, dotted)

    @property
    def pack_dir(self) -> Path:
        return self.file.parent


@dataclass
class GroupConfig:
    name: str
    file: Path
    tasks: list[str]
    aggregate: list[dict[str, Any]]


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
    except yaml.YAMLError:
        data = _load_marked(path, text)  # the message and line of the marked parse
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: a task file must be a mapping of keys to values")
    return YamlDoc(path, data, LineMap(text))


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
    from avhb.taskdef.checker import Unsupported, compile_schema

    try:
        return compile_schema(_schema())
    except Unsupported:
        return None


def validate_doc(doc: YamlDoc) -> None:
    """Raise a UserError naming file, line and key for the first schema error."""
    check = _fast_check()
    if check is not None and check(doc.data):
        return
    errors = sorted(_validator().iter_errors(doc.data), key=lambda e: (doc.line(tuple(e.absolute_path)), list(e.absolute_path)))
    if not errors:
        return
    err = errors[0]
    keypath = tuple(err.absolute_path)
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        if extra:
            raise doc.error(keypath + (extra[0],), f"unknown key {extra[0]!r}")
    best = err
    if err.context:  # oneOf: report the most specific alternative
        best = max(err.context, key=lambda e: len(e.absolute_path))
        keypath = tuple(best.absolute_path)
    raise doc.error(keypath, _short(best))


def _short(err) -> str:
    if err.validator == "type":
        return f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"[:200]
    if err.validator == "enum":
        return f"must be one of {err.validator_value}, got {err.instance!r}"
    return err.message[:200]


class Sources:
    """The files one index build reads: each include base parsed and
    validated once, each hook module's top-level names read (AST) once.

    ``consulted`` collects every base and hook module a resolve looked at,
    with the ``[mtime_ns, size]`` seen before reading it (None: missing):
    what the index keys a file's entry on.  The index clears it per file.
    Results are shared within one build only; without a Sources each
    resolve reads afresh."""

    def __init__(self, stats: dict[str, list[int] | None] | None = None) -> None:
        self.consulted: dict[str, list[int] | None] = {}
        self._stats: dict[str, list[int] | None] = {} if stats is None else stats  # shared with the index's looks
        self._once: dict[tuple, tuple[Any, dict[str, list[int] | None]]] = {}
        self._real_dirs: dict[str, str] = {}

    def stat(self, path: str) -> list[int] | None:
        """[mtime_ns, size] of a regular file, None if there is none (once per build)."""
        if path not in self._stats:
            try:
                st = os.stat(path)
                self._stats[path] = [st.st_mtime_ns, st.st_size] if stat.S_ISREG(st.st_mode) else None
            except OSError:
                self._stats[path] = None
        return self._stats[path]

    def note(self, path: str) -> list[int] | None:
        """Record that this resolve depends on ``path``; its stat (None: no such file)."""
        seen = self.consulted[path] = self.stat(path)
        return seen

    def once(self, key: tuple, compute):
        """``compute()`` once per build; the files it consulted are recorded
        for every later caller too.  Errors are not kept (raised afresh)."""
        hit = self._once.get(key)
        if hit is None:
            outer, self.consulted = self.consulted, {}
            try:
                hit = self._once[key] = (compute(), self.consulted)
            finally:
                outer.update(self.consulted)
                self.consulted = outer
        else:
            self.consulted.update(hit[1])
        return hit[0]

    def resolve(self, path: Path) -> Path:
        """``path.resolve()``, with each folder resolved once."""
        text = str(path)
        if not os.path.isabs(text) or f"{os.sep}..{os.sep}" in text or text.endswith(f"{os.sep}..") \
                or os.path.islink(text):
            return path.resolve()  # relative, "..", or a link: only resolve() says where it lands
        folder, name = os.path.split(text)
        real = self._real_dirs.get(folder)
        if real is None:
            real = self._real_dirs[folder] = os.path.realpath(folder)
        return Path(f"{real}{os.sep}{name}")


def load_with_includes(path: Path, seen: tuple[Path, ...] = (), *,
                       sources: Sources | None = None) -> tuple[dict[str, Any], Mapping[tuple, int], Path]:
    """Returns the merged mapping (child keys override the included file's),
    its line map, and the file that defined each top-level key is not tracked:
    errors after merging point at the child file."""
    sources = Sources() if sources is None else sources
    path = sources.resolve(path)
    if path in seen:
        chain = " -> ".join(str(p.name) for p in seen + (path,))
        raise UserError(f"{seen[-1]}:1: include: cycle ({chain})")
    doc = read_yaml(path)
    validate_doc(doc)
    data = dict(doc.data)
    parent_name = data.pop("include", None)
    if parent_name is None:
        return data, doc.lines, path
    parent_path = (path.parent / parent_name)
    if sources.note(str(parent_path)) is None:
        raise doc.error(("include",), f"included file {parent_name!r} not found next to {path.name}")
    # an include base is read once per build: a memoised base never cycles
    # back (each file has one parent, so a cycle would have failed its own read)
    parent = sources.once(("base", str(parent_path)),
                          lambda: load_with_includes(parent_path, seen + (path,), sources=sources)[0])
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


def hook_import_path(package: str, dotted: str) -> str:
    """``hooks.process_docs`` in package ``avhb.tasks.curve`` ->
    ``avhb.tasks.curve.hooks:process_docs``.  Hooks never leave the package."""
    module, _, attr = dotted.rpartition(".")
    if not module or not attr or dotted.startswith(".") or ".." in dotted:
        raise UserError(f"hook {dotted!r} must be module.function inside the task pack")
    return f"{package}.{module}:{attr}"


def check_hook(package: str, dotted: str, pack_dir: Path, *, sources: Sources | None = None) -> str | None:
    """Return an error message if the hook's module or function is missing.
    Reads the module's source (once per build with ``sources``); imports nothing."""
    sources = Sources() if sources is None else sources
    return sources.once(("hook", str(pack_dir), dotted), lambda: _check_hook(dotted, pack_dir, sources))


def _check_hook(dotted: str, pack_dir: Path, sources: Sources) -> str | None:
    module, _, attr = dotted.rpartition(".")
    folder = str(pack_dir)
    source = os.path.join(folder, *module.split(".")) + ".py"
    if sources.note(source) is None:
        pkg_init = os.path.join(folder, *module.split("."), "__init__.py")
        if sources.note(pkg_init) is None:
            return f"hook module {module!r} not found in {pack_dir}"
        source = pkg_init
    names = sources.once(("names", source), lambda: _module_names(source))
    if isinstance(names, str):
        return names
    if attr not in names:
        return f"hook function {attr!r} not defined in {os.path.basename(source)}"
    return None


def _module_names(source: str) -> set[str] | str:
    """Top-level names a hook module defines or imports, or the message of its syntax error."""
    try:
        tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    except SyntaxError as exc:
        return f"hook module {source} has a syntax error at line {exc.lineno}"
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def iter_hooks(config: dict[str, Any]):
    """(key path, dotted name) of every hook a resolved config names."""
    for key in HOOK_KEYS:
        value = config.get(key)
        if isinstance(value, dict) and "function" in value:
            yield (key,), value["function"]
    for listkey in ("metric_list", "filter_list"):
        for i, entry in enumerate(config.get(listkey) or []):
            if isinstance(entry, dict) and "function" in entry:
                yield (listkey, i, "function"), entry["function"]
    prep = config.get("prepare") or {}
    if "function" in prep:
        yield ("prepare", "function"), prep["function"]


def package_for(file: Path, root_dir: Path, root_package: str) -> str:
    rel = file.parent.relative_to(root_dir)
    return ".".join([root_package, *rel.parts]) if rel.parts else root_package


def _package_and_benchmark(file: Path, root_dir: Path, root_package: str) -> tuple[str, str]:
    root = root_dir.resolve()
    rel = file.parent.relative_to(root)
    return package_for(file, root, root_package), (rel.parts[0] if rel.parts else "")


def resolve_file(file: Path, root_dir: Path, root_package: str, namespace: str, *,
                 sources: Sources | None = None) -> tuple[list[TaskConfig], list[GroupConfig]]:
    """All tasks and groups defined by one YAML file (after include/expand).
    ``sources``: shared by the files of one index build (see Sources)."""
    sources = Sources() if sources is None else sources
    data, lines, file = load_with_includes(file, sources=sources)
    doc = YamlDoc(file, data, lines)
    prefix = f"{namespace}/" if namespace else ""
    package, benchmark = sources.once(("package", str(file.parent), str(root_dir), root_package),
                                      lambda: _package_and_benchmark(file, root_dir, root_package))
    if "group" in data and isinstance(data.get("task"), list):
        tasks = [prefix + t if "/" not in t else t for t in data["task"]]
        return [], [GroupConfig(prefix + data["group"], file, tasks, data.get("aggregate_metric_list") or [])]
    if isinstance(data.get("task"), list):
        raise doc.error(("task",), "a list of tasks needs a 'group' name")
    out = []
    try:
        members = expand_family(data)
    except UserError as exc:
        raise doc.error(("expand",), str(exc).removeprefix("expand: ")) from None
    pack_dir = file.parent
    for member in members:
        name = member.get("task")
        if not name:
            raise doc.error(("task",), "missing required key 'task'")
        if not member.get("doc_to_text") and not member.get("doc_to_messages"):
            raise doc.error(("task",), f"task {name!r} needs doc_to_text or doc_to_messages")
        for keypath, dotted in iter_hooks(member):
            problem = check_hook(package, dotted, pack_dir, sources=sources)
            if problem:
                raise doc.error(keypath, problem)
        out.append(TaskConfig(prefix + name, file, package, benchmark, member, lines))
    return out, []
