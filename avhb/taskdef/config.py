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

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.taskdef.filestats import Sources
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
