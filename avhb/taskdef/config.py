"""Reading task YAML: safe loading with line numbers, JSON Schema validation,
``include`` inheritance and family expansion.  Never executes code: hooks are
recorded as dotted paths and checked by reading the module's source (AST)."""
from __future__ import annotations

import ast
import copy
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


def validate_doc(doc: YamlDoc) -> None:
    """Raise a UserError naming file, line and key for the first schema error."""
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


def load_with_includes(path: Path, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], dict[tuple, int], Path]:
    """Returns the merged mapping (child keys override the included file's),
    its line map, and the file that defined each top-level key is not tracked:
    errors after merging point at the child file."""
    path = path.resolve()
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
    if not parent_path.is_file():
        raise doc.error(("include",), f"included file {parent_name!r} not found next to {path.name}")
    parent, _, _ = load_with_includes(parent_path, seen + (path,))
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


def resolve_file(file: Path, root_dir: Path, root_package: str, namespace: str) -> tuple[list[TaskConfig], list[GroupConfig]]:
    """All tasks and groups defined by one YAML file (after include/expand)."""
    data, lines, file = load_with_includes(file)
    doc = YamlDoc(file, data, lines)
    prefix = f"{namespace}/" if namespace else ""
    package = package_for(file, root_dir.resolve(), root_package)
    rel = file.parent.resolve().relative_to(root_dir.resolve())
    benchmark = rel.parts[0] if rel.parts else ""
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
    for member in members:
        name = member.get("task")
        if not name:
            raise doc.error(("task",), "missing required key 'task'")
        if not member.get("doc_to_text") and not member.get("doc_to_messages"):
            raise doc.error(("task",), f"task {name!r} needs doc_to_text or doc_to_messages")
        for keypath, dotted in iter_hooks(member):
            problem = check_hook(package, dotted, file.parent)
            if problem:
                raise doc.error(keypath, problem)
        out.append(TaskConfig(prefix + name, file, package, benchmark, member, lines))
    return out, []
