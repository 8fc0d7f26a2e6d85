"""Reading task YAML: safe loading with line numbers, JSON Schema validation,
``include`` inheritance and family expansion.  Never executes code: hooks are
recorded as dotted paths and checked by reading the module's source (AST)."""
from __future__ import annotations

import ast
import copy
import difflib
import functools
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from avhb.errors import UserError

SCHEMA_FILE = Path(__file__).parent / "schema" / "task.schema.json"
HOOK_KEYS = ("data_loader", "process_docs", "doc_to_messages", "driver", "doc_to_text", "doc_to_target", "doc_to_choice")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Loader(yaml.SafeLoader):
    """SafeLoader plus lm-eval's ``!function mod.fn`` (kept as data); a key
    given twice in one mapping is an error naming both lines (PyYAML keeps
    the last one silently)."""

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


_Loader.add_constructor("!function", lambda loader, node: {"function": loader.construct_scalar(node)})


@dataclass
class YamlDoc:
    path: Path
    data: dict[str, Any]
    lines: dict[tuple, int]  # key path -> 1-based line

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
    lines: dict[tuple, int] = field(default_factory=dict, repr=False)
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
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise UserError(f"{path}:{line}: YAML error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}:1: YAML error: {exc}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: a task file must be a mapping of keys to values")
    return YamlDoc(path, data, _linemap(node))


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    return jsonschema.Draft202012Validator(schema)


# lm-eval task keys avhb does not implement: named, so a copied file says why
LM_EVAL_ONLY = {
    "fewshot_split": "few-shot prompting is not implemented",
    "num_fewshot": "few-shot prompting is not implemented",
    "fewshot_config": "few-shot prompting is not implemented",
    "fewshot_delimiter": "few-shot prompting is not implemented",
    "training_split": "avhb evaluates one split (test_split)",
    "validation_split": "avhb evaluates one split (test_split)",
    "should_decontaminate": "decontamination is not implemented",
    "doc_to_decontamination_query": "decontamination is not implemented",
    "target_delimiter": "options are scored as ' ' + choice",
    "doc_to_visual": "name media files in the media block (video/audio/images) or use doc_to_messages",
    "lmms_eval_specific_kwargs": "put prompt text in doc_to_text or a hook",
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
    line order."""
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


def load_with_includes(path: Path, seen: tuple[Path, ...] = (),
                       errors: list[str] | None = None) -> tuple[dict[str, Any], dict[tuple, int], Path]:
    """Returns the merged mapping (child keys override the included file's),
    its line map, and the file that defined each top-level key is not tracked:
    errors after merging point at the child file.  Schema errors are
    appended to ``errors`` when given (the caller goes on and reports them
    with any others), else raised as :class:`ConfigErrors`."""
    path = path.resolve()
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
    if not parent_path.is_file():
        raise doc.error(("include",), f"included file {parent_name!r} not found next to {path.name}")
    parent, _, _ = load_with_includes(parent_path, seen + (path,), errors)
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
    return [_substitute(copy.deepcopy(body), {k: str(v) for k, v in combo.items()}) for combo in combos]


def _substitute(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        def repl(m: re.Match) -> str:
            if m.group(1) not in variables:
                raise UserError(f"expand: variable ${{{m.group(1)}}} is not declared")
            return variables[m.group(1)]
        return _VAR.sub(repl, value)
    if isinstance(value, dict):
        return {_substitute(k, variables): _substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    return value


def hook_import_path(package: str, dotted: str) -> str:
    """``hooks.process_docs`` in package ``avhb.tasks.curve`` ->
    ``avhb.tasks.curve.hooks:process_docs``.  Hooks never leave the package."""
    module, _, attr = dotted.rpartition(".")
    if not module or not attr or dotted.startswith(".") or ".." in dotted:
        raise UserError(f"hook {dotted!r} must be module.function inside the task pack")
    return f"{package}.{module}:{attr}"


def check_hook(package: str, dotted: str, pack_dir: Path) -> str | None:
    """Return an error message if the hook's module or function is missing.
    Reads the module's source; imports nothing."""
    module, _, attr = dotted.rpartition(".")
    source = pack_dir.joinpath(*module.split(".")).with_suffix(".py")
    if not source.is_file():
        pkg_init = pack_dir.joinpath(*module.split("."), "__init__.py")
        if not pkg_init.is_file():
            return f"hook module {module!r} not found in {pack_dir}"
        source = pkg_init
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
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
    if attr not in names:
        return f"hook function {attr!r} not defined in {source.name}"
    return None


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
                    known: KnownNames | None = None) -> list[tuple[tuple, str]]:
    """(key path, message) of every problem of one resolved task: hooks
    (read, never imported), templates (parsed, never rendered), judge
    prompt files, metric and filter names."""
    from avhb.taskdef.templates import check_template

    out: list[tuple[tuple, str]] = []
    try:
        _member_problems(member, package, folder, known, out, check_template)
    except (TypeError, AttributeError, ValueError):  # a shape the schema already refused
        pass
    return out


def _member_problems(member, package, folder, known, out, check_template) -> None:
    for keypath, dotted in iter_hooks(member):
        problem = check_hook(package, dotted, folder)
        if problem:
            out.append((keypath, problem))
    for keypath, source in iter_templates(member):
        problem = check_template(source)
        if problem:
            out.append((keypath, problem))
    for role, spec in (member.get("judges") or {}).items():
        name = spec.get("prompt_file") if isinstance(spec, dict) else None
        if isinstance(name, str):
            path = folder / name
            if not path.is_file():
                out.append((("judges", role, "prompt_file"), f"prompt file {name!r} not found next to the YAML"))
            else:
                problem = check_template(path.read_text(encoding="utf-8"))
                if problem:
                    out.append((("judges", role, "prompt_file"), f"{name}: {problem}"))
    if known is not None:
        for listkey, field_name, names in (("metric_list", "metric", known.metrics),
                                           ("filter_list", "filter", known.filters)):
            if names is None:
                continue
            for i, entry in enumerate(member.get(listkey) or []):
                name = entry.get(field_name) if isinstance(entry, dict) else None
                if not isinstance(name, str) or name in names:
                    continue
                close = difflib.get_close_matches(name, sorted(names), n=3)
                if field_name == "metric" and "evaluate" in names and _evaluate_name(name, folder, close):
                    continue  # loaded through Hugging Face evaluate at run time (the metric fallback)
                hint = f"; did you mean {', '.join(close)}?" if close else f" (see `avhb list {field_name}s`)"
                out.append(((listkey, i, field_name), f"unknown {field_name} {name!r}{hint}"))


def _evaluate_name(name: str, folder: Path, close: list[str]) -> bool:
    """An unregistered metric name that the ``evaluate`` fallback will load:
    ``evaluate/NAME``, a module file or folder next to the YAML, or a bare
    name that resembles no registered metric (a close one is a typo)."""
    if name.startswith("evaluate/"):
        return True
    if name.endswith(".py") or "/" in name:
        return (folder / name).exists() or (folder / (name + ".py")).exists()
    return not close


def resolve_file(file: Path, root_dir: Path, root_package: str, namespace: str,
                 known: KnownNames | None = None) -> tuple[list[TaskConfig], list[GroupConfig]]:
    """All tasks and groups defined by one YAML file (after include/expand).
    Every problem of the file is collected and raised together as
    :class:`ConfigErrors`."""
    problems: list[str] = []
    data, lines, file = load_with_includes(file, errors=problems)
    doc = YamlDoc(file, data, lines)
    prefix = f"{namespace}/" if namespace else ""
    package = package_for(file, root_dir.resolve(), root_package)
    rel = file.parent.resolve().relative_to(root_dir.resolve())
    benchmark = rel.parts[0] if rel.parts else ""
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
    for member in members:
        name = member.get("task")
        if not isinstance(name, str) and name is not None:
            continue  # the schema error says why
        if not name:
            problems.append(str(doc.error(("task",), "missing required key 'task'")))
            continue
        if not member.get("doc_to_text") and not member.get("doc_to_messages"):
            problems.append(str(doc.error(("task",), f"task {name!r} needs doc_to_text or doc_to_messages")))
        problems += [str(doc.error(keypath, message))
                     for keypath, message in member_problems(member, package, file.parent, known)]
        out.append(TaskConfig(prefix + name, file, package, benchmark, member, lines, namespace))
    if problems:
        raise ConfigErrors(problems)
    return out, []
