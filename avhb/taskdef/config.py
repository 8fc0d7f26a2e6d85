"""A task file resolved into its tasks and groups (``resolve_file``): the
YAML read with line numbers (:mod:`avhb.taskdef.yaml_file`), checked
against the schema (:mod:`avhb.taskdef.schema_check`), its ``include:``
base merged and ``expand:`` families made (:mod:`avhb.taskdef.yaml_include`),
each task checked without running its code (:mod:`avhb.taskdef.task_checks`).
Never executes code: hooks are recorded as dotted paths.

Fast by construction: YAML is read with the C loader and line numbers are
worked out only when a message needs one; the schema is compiled once into
plain checks; a ``Sources`` shared by one index build reads each include
base and each hook module once."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.taskdef.filestats import Sources
from avhb.taskdef.metric_keys import avhb_metric
from avhb.taskdef.task_checks import KnownNames, member_problems
from avhb.taskdef.yaml_file import ConfigErrors, YamlDoc
from avhb.taskdef.yaml_include import expand_family, load_with_includes


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
    root: Path | None = None  # the task package's folder, whose package is root_package
    root_package: str = ""

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
        """The import path of ``!function module.fn`` (``package.module:fn``),
        found as :func:`avhb.taskdef.hook_names.find_hook_module` finds it: a
        module next to the YAML (or next to the base that named it), else a
        peer harness's module by its absolute path, imported from this task
        package when the file lies inside it."""
        from avhb.taskdef.hook_names import find_hook_module, split_hook

        rel, module, attr = split_hook(dotted)
        if not module or not attr or module.startswith(".") or ".." in module:
            raise UserError(f"hook {dotted!r} must be module.function inside the task pack")
        folder = (self.pack_dir / rel).resolve() if rel else self.pack_dir
        found = find_hook_module(module, str(folder))
        package = self.package
        if rel:
            if self.root is None or not self.root_package:
                raise UserError(f"hook {dotted!r}: a hook of a base in another folder needs the task's package root")
            try:
                package = package_for(folder / "x.yaml", self.root.resolve(), self.root_package)
            except ValueError:
                raise UserError(f"hook {dotted!r} lies outside the task package {self.root}") from None
        if found is None or not found.absolute:
            return hook_import_path(package, f"{module}.{attr}")
        if self.root is not None and self.root_package:
            path = Path(found.path)
            holder = path.parent if path.name != "__init__.py" else path.parent.parent
            try:
                package = package_for(holder / "x.yaml", self.root.resolve(), self.root_package)
            except ValueError:  # outside this task package: the installed peer's module
                return f"{module}:{attr}"
            name = path.parent.name if path.name == "__init__.py" else path.stem
            return f"{package}.{name}:{attr}"
        return f"{module}:{attr}"

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
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # member -> keys set for it in this group
    aliases: dict[str, str] = field(default_factory=dict)  # member -> its display name in this group (task_alias)


def hook_import_path(package: str, dotted: str) -> str:
    """``hooks.process_docs`` in package ``avhb.tasks.curve`` ->
    ``avhb.tasks.curve.hooks:process_docs``.  Hooks never leave the package."""
    module, _, attr = dotted.rpartition(".")
    if not module or not attr or dotted.startswith(".") or ".." in dotted:
        raise UserError(f"hook {dotted!r} must be module.function inside the task pack")
    return f"{package}.{module}:{attr}"


def package_for(file: Path, root_dir: Path, root_package: str) -> str:
    rel = file.parent.relative_to(root_dir)
    return ".".join([root_package, *rel.parts]) if rel.parts else root_package


def _package_and_benchmark(file: Path, root_dir: Path, root_package: str) -> tuple[str, str]:
    root = root_dir.resolve()
    rel = file.parent.relative_to(root)
    return package_for(file, root, root_package), (rel.parts[0] if rel.parts else "")


# What avhb deliberately does not run, each with why: a file using one is refused with this line
UNSUPPORTED = {
    "class": "a Python task class (`class:`) is not supported: avhb runs tasks from YAML and hooks "
             "(write the task as YAML with !function hooks)",
    "unsafe_code": "`unsafe_code: true` tasks execute model-written code; avhb does not run it",
    "use_prompt": "promptsource templates (`use_prompt:`) are not supported (write doc_to_text)",
}

# lmms-eval's output types a task file may declare that avhb loads but does not run, each with why:
# ``avhb validate`` notes it, a run refuses the task in one line before any data is read (avhb.run.plan)
UNRUNNABLE_OUTPUT_TYPES = {
    "generate_until_multi_round": "lmms-eval leaves the rounds to each model class (its OpenAI-compatible models "
                                  "do not implement them), so there is no one behaviour to reproduce; write the "
                                  "rounds as a driver hook (driver: !function module.drive)",
    "generate_until_agentic": "lmms-eval's agentic loop lives in its evaluator (tool state passed back to "
                              "doc_to_text, a give-up payload naming two benchmarks' fields); write the loop as "
                              "a driver hook (driver: !function module.drive)",
    "generate_visual_cot": "the model first generates an image (lmms-eval's image-generation models only); "
                           "avhb's backends answer in text",
}


def unsupported(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key, why) of the first key of a task that avhb refuses to load
    (:data:`UNSUPPORTED`), or None."""
    for key, why in UNSUPPORTED.items():
        if config.get(key) not in (None, False):
            return key, why
    return None


def unrunnable(config: Mapping[str, Any]) -> str | None:
    """Why avhb loads this task but cannot run it (``output_type X: why``,
    :data:`UNRUNNABLE_OUTPUT_TYPES`), or None."""
    kind = config.get("output_type")
    if isinstance(kind, str) and kind in UNRUNNABLE_OUTPUT_TYPES:
        return f"output_type {kind}: {UNRUNNABLE_OUTPUT_TYPES[kind]}"
    return None


def drop_unset(data: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's reading of ``null``: a top-level key (or a fewshot_config
    key) set to null is unset, over whatever a base gave it."""
    out = {k: v for k, v in data.items() if v is not None}
    if isinstance(out.get("fewshot_config"), dict):
        out["fewshot_config"] = {k: v for k, v in out["fewshot_config"].items() if v is not None}
    return out


def resolve_file(file: Path, root_dir: Path, root_package: str, namespace: str,
                 known: KnownNames | None = None, *,
                 sources: Sources | None = None) -> tuple[list[TaskConfig], list[GroupConfig]]:
    """All tasks and groups defined by one YAML file (after include/expand).
    Every problem of the file is collected and raised together as
    :class:`ConfigErrors`; notes (keys given twice, hooks a static read
    cannot decide, missing packages, an output type avhb loads but does
    not run) go to ``sources.notes``.  ``sources``:
    shared by the files of one index build (see Sources).  A file named
    ``_*.yaml`` with neither ``task`` nor ``group`` is an include base: it
    defines nothing."""
    sources = Sources() if sources is None else sources
    problems: list[str] = []
    data, lines, file = load_with_includes(file, errors=problems, sources=sources)
    data = drop_unset(data)
    doc = YamlDoc(file, data, lines)
    prefix = f"{namespace}/" if namespace else ""
    package, benchmark = sources.once(("package", str(file.parent), str(root_dir), root_package),
                                      lambda: _package_and_benchmark(file, root_dir, root_package))
    refused = unsupported(data)
    if refused is not None:  # the one line that matters: the file's other errors are moot
        raise ConfigErrors([str(doc.error((refused[0],), f"unsupported: {refused[1]}"))])
    if "group" in data and isinstance(data.get("task"), list):
        if problems:
            raise ConfigErrors(problems)
        return [], _groups(data, file, prefix, doc)
    if isinstance(data.get("task"), list):
        raise ConfigErrors(problems + [str(doc.error(("task",), "a list of tasks needs a 'group' name"))])
    if "task" not in data and "group" not in data and (file.name.startswith("_") or _included(file, sources)):
        if problems:
            raise ConfigErrors(problems)
        return [], []  # an include base
    out = []
    try:
        members = expand_family(data)
    except UserError as exc:
        raise ConfigErrors(problems + [str(doc.error(("expand",), str(exc).removeprefix("expand: ")))]) from None
    except (TypeError, AttributeError, ValueError):  # a malformed expand block: the schema said why
        raise ConfigErrors(problems or [str(doc.error(("expand",), "malformed"))]) from None
    schema_refused = bool(problems)  # so far: the schema's errors of the file and its bases
    notes: list[tuple[tuple, str]] = []
    for member in members:
        name = member.get("task")
        if not isinstance(name, str) and name is not None:
            continue  # the schema error says why
        if not name:
            problems.append(str(doc.error(("task",), "missing required key 'task'")))
            continue
        if member.get("doc_to_text") is None and not member.get("doc_to_messages") \
                and member.get("output_type") != "loglikelihood_rolling":  # rolling scores the target alone
            problems.append(str(doc.error(("task",), f"task {name!r} needs doc_to_text or doc_to_messages")))
        problems += [str(doc.error(keypath, message))
                     for keypath, message in member_problems(member, package, file.parent, known, sources=sources,
                                                               schema_refused=schema_refused, notes=notes)]
        if (why := unrunnable(member)) is not None:
            notes.append((("output_type",), f"task {name!r} loads, but avhb cannot run it: {why}"))
        out.append(TaskConfig(prefix + name, file, package, benchmark, member, lines, namespace,
                              root_dir, root_package))
    if notes:
        seen = sources.notes.setdefault(str(file), [])
        seen += [line for line in dict.fromkeys(doc.note(k, m) for k, m in notes) if line not in seen]
    if problems:
        raise ConfigErrors(problems)
    return out, []


def _aggregate_entry(entry: Any) -> Any:
    """A group metric as its members report it: lm-eval's ``metric: !function
    mod.fn`` is the function's name (a member's callable metric reports
    under it); lm-eval's ``acc,none`` is ``acc`` (:func:`avhb_metric`)."""
    if isinstance(entry, dict) and isinstance(entry.get("metric"), dict) and "function" in entry["metric"]:
        return {**entry, "metric": str(entry["metric"]["function"]).rpartition(".")[2]}
    if isinstance(entry, dict) and isinstance(entry.get("metric"), str):
        return {**entry, "metric": avhb_metric(entry["metric"])}
    return entry


def _included(file: Path, sources: Sources) -> bool:
    """Whether a YAML file in the same folder names ``file`` in an ``include:``
    (a base need not be called ``_*.yaml``; lm-eval skips such a file)."""
    def names() -> frozenset[str]:
        found: set[str] = set()
        for other in sorted(file.parent.iterdir()):
            if other.suffix not in (".yaml", ".yml") and not other.name.endswith("_yaml"):
                continue
            try:
                text = other.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found.update(m.strip().strip("'\"") for m in _INCLUDE_LINE.findall(text))
            for block in _INCLUDE_LIST.findall(text):
                found.update(m.strip().strip("'\"") for m in re.findall(r"^\s*-\s*(\S+)", block, flags=re.M))
        return frozenset(Path(n).name for n in found)

    return file.name in sources.once(("included-names", str(file.parent)), names)


_INCLUDE_LINE = re.compile(r"^include:[ \t]*(\S+)[ \t]*$", re.M)
_INCLUDE_LIST = re.compile(r"^include:[ \t]*\n((?:[ \t]+-.*\n?)+)", re.M)


def _groups(data: dict[str, Any], file: Path, prefix: str, doc: YamlDoc) -> list[GroupConfig]:
    """A group file's group, and the groups it defines inline (lm-eval: a
    ``task:`` entry ``{group: NAME, task: [...]}``).  An entry is a name, or
    ``{task: NAME, ...}`` whose other keys apply to that member in this group
    (``task_alias`` names it in tables)."""
    out: list[GroupConfig] = []

    def named(name: str) -> str:
        return prefix + name if "/" not in name else name

    def build(name: str, spec: dict[str, Any]) -> GroupConfig:
        aggregate = spec.get("aggregate_metric_list") or []
        entries = [aggregate] if isinstance(aggregate, dict) else list(aggregate)
        group = GroupConfig(named(name), file, [], [_aggregate_entry(e) for e in entries],
                            spec.get("aggregate_over", "tasks"))
        out.append(group)
        for entry in spec.get("task") or []:
            if isinstance(entry, str):
                group.tasks.append(named(entry))
            elif isinstance(entry, dict) and isinstance(entry.get("group"), str):
                if isinstance(entry.get("task"), list):
                    build(entry["group"], entry)  # an inline subgroup
                group.tasks.append(named(entry["group"]))
            elif isinstance(entry, dict) and (refused := unsupported(entry)) is not None:
                raise doc.error(("task",), f"unsupported: {refused[1]} (a member of group {name!r})")
            elif isinstance(entry, dict) and (why := unrunnable(entry)) is not None:  # a member's keys set here are not run
                raise doc.error(("task",), f"unsupported: {why} (a member of group {name!r})")
            elif isinstance(entry, dict) and isinstance(entry.get("task"), str):
                member = named(entry["task"])
                group.tasks.append(member)
                rest = {k: v for k, v in entry.items() if k not in ("task", "task_alias")}
                if isinstance(entry.get("task_alias"), str):
                    group.aliases[member] = entry["task_alias"]
                if rest:
                    group.overrides[member] = rest
            else:
                raise doc.error(("task",), f"a group member is a name, {{task: NAME, ...}} or {{group: NAME, ...}}; "
                                           f"got {entry!r}"[:200])
        return group

    build(str(data["group"]), data)
    return out
