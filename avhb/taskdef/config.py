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
import difflib
import functools
import itertools
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from avhb.errors import UserError
from avhb.taskdef.filestats import FileStats

SCHEMA_FILE = Path(__file__).parent / "schema" / "task.schema.json"
HOOK_KEYS = ("data_loader", "process_docs", "doc_to_messages", "driver", "doc_to_text", "doc_to_target", "doc_to_choice",
             "process_results", "doc_to_visual")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _NoDuplicateKeys:
    """A key given twice in one mapping is an error naming both lines
    (PyYAML keeps the last one silently).  Both loaders have node marks."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = key_node.value
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping (first at line {seen[key]})",
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class _Loader(_NoDuplicateKeys, yaml.SafeLoader):
    """SafeLoader plus lm-eval's ``!function mod.fn`` (kept as data); the
    pure-Python loader, which keeps line marks: used for messages."""


class _FastLoader(_NoDuplicateKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when PyYAML was built with it
    """The same constructors over the C parser (node marks carry lines, but no
    line map is built: LineMap works it out when a message needs it)."""


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
    namespace: str = ""  # the plugin's name for a third-party pack; "" for the built-ins

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    def _ns(self, name: str) -> str:
        return f"{self.namespace}/{name}" if self.namespace and "/" not in name else name

    @property
    def tags(self) -> list[str]:
        """The task's tags, namespaced like its name (``mypack/shapes_tasks``)."""
        tags = self.config.get("tag") or []
        return [self._ns(str(t)) for t in ([tags] if isinstance(tags, str) else tags)]

    @property
    def data_name(self) -> str:
        """The pack's name for ``--data NAME=PATH``: its folder, namespaced
        (``mypack/shapes``; bare for the built-ins)."""
        return self._ns(self.benchmark) if self.benchmark else self.namespace

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
    aggregate_over: str = "tasks"  # "tasks": every task under the group; "members": each direct member's score


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


# lm-eval task keys avhb does not implement: named, so a copied file says why
LM_EVAL_ONLY = {
    "gen_prefix": "an assistant-turn prefix is not implemented (put the text at the end of doc_to_text)",
    "use_prompt": "promptsource templates are not implemented (write doc_to_text)",
    "full_docs": "process_results gets one doc (lmms-eval's full_docs is not implemented)",
}


class ConfigErrors(UserError):
    """Every problem found in one task file (``messages``); its text is the
    first, with a count of the others."""

    def __init__(self, messages: list[str]):
        self.messages = list(dict.fromkeys(messages))
        more = len(self.messages) - 1
        super().__init__(self.messages[0] + (f" (and {more} more; see `avhb validate FILE`)" if more else ""))


def schema_errors(doc: YamlDoc) -> list[str]:
    """Every schema error of a file, each naming file, line and key, in
    line order.  The compiled checks pass a valid file; only a failing one
    goes through jsonschema, which writes the messages."""
    check = _fast_check()
    if check is not None and check(doc.data):
        return []
    errors = sorted(_validator().iter_errors(doc.data), key=lambda e: (doc.line(tuple(e.absolute_path)), list(e.absolute_path)))
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


class Sources:
    """The files one index build reads: each include base parsed and
    validated once, each hook module's top-level names read (AST) once.

    ``consulted`` collects every base and hook module a resolve looked at,
    with the ``[mtime_ns, size]`` seen before reading it (None: missing):
    what the index keys a file's entry on.  The index clears it per file.
    Results are shared within one build only; without a Sources each
    resolve reads afresh."""

    def __init__(self, stats: FileStats | None = None) -> None:
        self.consulted: dict[str, list[int] | None] = {}
        self.stat = FileStats() if stats is None else stats  # shared with the index's looks
        self._once: dict[tuple, tuple[Any, dict[str, list[int] | None]]] = {}
        self._real_dirs: dict[str, str] = {}

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
            aggregation = entry.get("aggregation") if isinstance(entry, dict) else None
            if isinstance(aggregation, dict) and "function" in aggregation:
                yield (listkey, i, "aggregation"), aggregation["function"]
            steps = entry.get("filter") if isinstance(entry, dict) else None
            for j, step in enumerate(steps if isinstance(steps, list) else []):  # an lm-eval pipeline's steps
                for key, value in (step.items() if isinstance(step, dict) else ()):
                    if isinstance(value, dict) and isinstance(value.get("function"), str):
                        yield (listkey, i, "filter", j, key), value["function"]
    prep = config.get("prepare") or {}
    if "function" in prep:
        yield ("prepare", "function"), prep["function"]
    fewshot = config.get("fewshot_config") or {}
    for key in ("samples", "process_docs", "doc_to_text", "doc_to_target", "doc_to_choice"):
        value = fewshot.get(key) if isinstance(fewshot, dict) else None
        if isinstance(value, dict) and isinstance(value.get("function"), str):
            yield ("fewshot_config", key), value["function"]


def package_for(file: Path, root_dir: Path, root_package: str) -> str:
    rel = file.parent.relative_to(root_dir)
    return ".".join([root_package, *rel.parts]) if rel.parts else root_package


def _package_and_benchmark(file: Path, root_dir: Path, root_package: str) -> tuple[str, str]:
    root = root_dir.resolve()
    rel = file.parent.relative_to(root)
    return package_for(file, root, root_package), (rel.parts[0] if rel.parts else "")


@dataclass(frozen=True)
class KnownNames:
    """Registered metric and filter names, for ``metric:`` / ``filter:``
    entries (``None`` in a field: not checked)."""

    metrics: frozenset[str] | None = None
    filters: frozenset[str] | None = None


def iter_templates(config: dict[str, Any]):
    """(key path, template text) of every template a resolved config holds."""
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice", "system_prompt"):
        if isinstance(config.get(key), str):
            yield (key,), config[key]
    for key, value in (config.get("media") or {}).items():
        if key in ("video", "audio", "images", "asr_language") and isinstance(value, str):
            yield ("media", key), value
    for role, spec in (config.get("judges") or {}).items():
        if isinstance(spec, dict) and isinstance(spec.get("prompt"), str):
            yield ("judges", role, "prompt"), spec["prompt"]


def member_problems(member: dict[str, Any], package: str, folder: Path,
                    known: KnownNames | None = None, *, sources: Sources | None = None,
                    schema_refused: bool = False) -> list[tuple[tuple, str]]:
    """(key path, message) of every problem of one resolved task: hooks
    (read, never imported), templates (parsed, never rendered), judge
    prompt files, metric and filter names.  Every file read is noted in
    ``sources`` (the index keys the task file's entry on them).
    ``schema_refused``: the file already has schema errors (a shape these
    checks trip over is then not reported twice)."""
    from avhb.taskdef.templates import check_template

    sources = Sources() if sources is None else sources
    out: list[tuple[tuple, str]] = []
    try:
        _member_problems(member, package, folder, known, out, check_template, sources)
    except (TypeError, AttributeError, ValueError) as exc:  # a shape these checks do not expect
        if not schema_refused:  # else the schema error already says why; otherwise say it, never skip silently
            out.append(((), f"the task could not be checked ({type(exc).__name__}: {exc})"))
    return out


def _member_problems(member, package, folder, known, out, check_template, sources: Sources) -> None:
    for keypath, dotted in iter_hooks(member):
        problem = check_hook(package, dotted, folder, sources=sources)
        if problem:
            out.append((keypath, problem))
    filters = member.get("filter_list") or []
    pipelines = [isinstance(e, dict) and isinstance(e.get("filter"), list) for e in filters]
    if any(pipelines) and not all(pipelines):
        out.append((("filter_list",), "mixes lm-eval pipelines ({name, filter: [...]}) with avhb filter steps "
                                      "({filter: NAME}); use one form"))
    for keypath, source in iter_templates(member):
        problem = check_template(source)
        if problem:
            out.append((keypath, problem))
    for role, spec in (member.get("judges") or {}).items():
        name = spec.get("prompt_file") if isinstance(spec, dict) else None
        if isinstance(name, str):
            path = folder / name
            if sources.note(str(path)) is None:
                out.append((("judges", role, "prompt_file"), f"prompt file {name!r} not found next to the YAML"))
            else:
                problem = sources.once(("prompt", str(path)),
                                       lambda: check_template(path.read_text(encoding="utf-8")))
                if problem:
                    out.append((("judges", role, "prompt_file"), f"{name}: {problem}"))
    if known is not None:
        for listkey, field_name, names in (("metric_list", "metric", known.metrics),
                                           ("filter_list", "filter", known.filters)):
            if names is None or (field_name == "metric" and member.get("process_results") is not None):
                continue  # process_results: metric_list names the keys the hook returns
            named = []
            for i, entry in enumerate(member.get(listkey) or []):
                value = entry.get(field_name) if isinstance(entry, dict) else None
                if isinstance(value, list):  # an lm-eval filter pipeline: its steps' names
                    named += [((listkey, i, "filter", j, "function"), step.get("function"))
                              for j, step in enumerate(value) if isinstance(step, dict)]
                else:
                    named.append(((listkey, i, field_name), value))
            for keypath, name in named:
                if not isinstance(name, str) or name in names:
                    continue
                close = difflib.get_close_matches(name, sorted(names), n=3)
                if field_name == "metric" and "evaluate" in names and _evaluate_name(name, folder, close, sources):
                    continue  # loaded through Hugging Face evaluate at run time (the metric fallback)
                hint = f"; did you mean {', '.join(close)}?" if close else f" (see `avhb list {field_name}s`)"
                out.append((keypath, f"unknown {field_name} {name!r}{hint}"))


def _evaluate_name(name: str, folder: Path, close: list[str], sources: Sources) -> bool:
    """An unregistered metric name that the ``evaluate`` fallback will load:
    ``evaluate/NAME``, a module file or folder next to the YAML, or a bare
    name that resembles no registered metric (a close one is a typo)."""
    if name.startswith("evaluate/"):
        return True
    if name.endswith(".py") or "/" in name:
        return (sources.note(str(folder / name)) is not None or sources.note(str(folder / (name + ".py"))) is not None
                or (folder / name).is_dir())
    return not close


def resolve_file(file: Path, root_dir: Path, root_package: str, namespace: str,
                 known: KnownNames | None = None, *,
                 sources: Sources | None = None) -> tuple[list[TaskConfig], list[GroupConfig]]:
    """All tasks and groups defined by one YAML file (after include/expand).
    Every problem of the file is collected and raised together as
    :class:`ConfigErrors`.  ``sources``: shared by the files of one index
    build (see Sources)."""
    sources = Sources() if sources is None else sources
    problems: list[str] = []
    data, lines, file = load_with_includes(file, errors=problems, sources=sources)
    doc = YamlDoc(file, data, lines)
    prefix = f"{namespace}/" if namespace else ""
    package, benchmark = sources.once(("package", str(file.parent), str(root_dir), root_package),
                                      lambda: _package_and_benchmark(file, root_dir, root_package))
    if "group" in data and isinstance(data.get("task"), list):
        if problems:
            raise ConfigErrors(problems)
        tasks = [prefix + t if "/" not in t else t for t in data["task"]]
        return [], [GroupConfig(prefix + data["group"], file, tasks, data.get("aggregate_metric_list") or [],
                                data.get("aggregate_over", "tasks"))]
    if isinstance(data.get("task"), list):
        raise ConfigErrors(problems + [str(doc.error(("task",), "a list of tasks needs a 'group' name"))])
    out = []
    try:
        members = expand_family(data)
    except UserError as exc:
        raise ConfigErrors(problems + [str(doc.error(("expand",), str(exc).removeprefix("expand: ")))]) from None
    except (TypeError, AttributeError, ValueError):  # a malformed expand block: the schema said why
        raise ConfigErrors(problems or [str(doc.error(("expand",), "malformed"))]) from None
    schema_refused = bool(problems)  # so far: the schema's errors of the file and its bases
    for member in members:
        name = member.get("task")
        if not isinstance(name, str) and name is not None:
            continue  # the schema error says why
        if not name:
            problems.append(str(doc.error(("task",), "missing required key 'task'")))
            continue
        if not member.get("doc_to_text") and not member.get("doc_to_messages") \
                and member.get("output_type") != "loglikelihood_rolling":  # rolling scores the target alone
            problems.append(str(doc.error(("task",), f"task {name!r} needs doc_to_text or doc_to_messages")))
        problems += [str(doc.error(keypath, message))
                     for keypath, message in member_problems(member, package, file.parent, known, sources=sources,
                                                               schema_refused=schema_refused)]
        out.append(TaskConfig(prefix + name, file, package, benchmark, member, lines, namespace))
    if problems:
        raise ConfigErrors(problems)
    return out, []
