"""``avhb validate``: every problem of task files, one line each, without
running their code (schema, templates, hooks read by AST, metric and filter
names, metric options and judge roles), and their notes (keys given twice,
hooks a static read cannot decide, packages this machine lacks).

Two ways in: the installed task packages (:func:`validate_installed`, the
index rebuilt from scratch) or files and folders given by path
(:func:`validate_paths`; a folder is every ``*.yaml``/``*.yml`` under it,
each resolved with its own folder as the pack root)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from avhb.errors import UserError
from avhb.registry import Registry
from avhb.score.metric_check import task_problems
from avhb.taskdef.config import resolve_file
from avhb.taskdef.filestats import Sources
from avhb.taskdef.index import build_index, known_names
from avhb.taskdef.yaml_file import ConfigErrors


@dataclass
class Validation:
    files: int = 0
    tasks: int = 0
    groups: int = 0
    bad_files: int = 0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self, installed: bool) -> str:
        if installed:
            return f"{self.tasks} tasks, {self.groups} groups, {len(self.errors)} errors"
        return f"{self.files} files, {self.bad_files} with errors" + (f", {len(self.errors)} errors" if self.errors else "")


def validate_installed(registry: Registry) -> Validation:
    """Every installed task package (the index built afresh)."""
    index = build_index(registry, use_cache=False)
    out = Validation(tasks=len(index.tasks), groups=len(index.groups), errors=list(index.errors))
    for file, info in {i["file"]: i for i in index.tasks.values()}.items():  # metric options and roles
        task_cfgs, _ = resolve_file(Path(file), Path(info["root"]), info["package"], info["namespace"])
        out.errors += [line for cfg in task_cfgs for line in task_problems(cfg, registry)]
    out.notes = [line for lines in index.notes.values() for line in lines]
    return out


def task_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        files += sorted([*p.rglob("*.yaml"), *p.rglob("*.yml")]) if p.is_dir() else [p]
    return files


def validate_paths(paths: list[Path], registry: Registry) -> Validation:
    """The task files under ``paths``, each checked in full."""
    known = known_names(registry)
    out = Validation()
    for f in task_files(paths):
        out.files += 1
        sources = Sources()
        try:
            task_cfgs, group_cfgs = resolve_file(f, f.parent, "pack", "", known, sources=sources)
            out.tasks += len(task_cfgs)
            out.groups += len(group_cfgs)
            problems = [line for cfg in task_cfgs for line in task_problems(cfg, registry)]
            if problems:  # metric options and judge roles (metric_check)
                raise ConfigErrors(problems)
        except ConfigErrors as exc:
            out.bad_files += 1
            out.errors += exc.messages
        except UserError as exc:
            out.bad_files += 1
            out.errors.append(str(exc))
        out.notes += [line for lines in sources.notes.values() for line in lines if line not in out.notes]
    return out
