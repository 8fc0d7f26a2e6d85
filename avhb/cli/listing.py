"""``avhb list [WHAT] [NAME...]``: tasks, groups and tags from the task
index (no hook imported), models (presets), metrics, filters, judges,
backends with their arguments, plugin commands and plugins."""
from __future__ import annotations

import argparse
import json
import sys

from avhb.cli.parsing import add_flag
from avhb.errors import UserError

LISTABLE = ("tasks", "groups", "tags", "models", "metrics", "filters", "judges", "backends", "commands", "plugins")


def command(args, argv) -> int:
    from avhb.registry import get_registry

    registry = get_registry()
    if args.names and args.what != "backends":
        raise UserError(f"avhb list {args.what or ''} takes no names (only `avhb list backends NAME...` does)")
    if args.what is None:  # what can be listed, and how many of each
        return _list_kinds(registry)
    if args.what in ("tasks", "groups", "tags"):
        return list_index(args.what, registry, args.json)
    if args.what == "plugins":
        for p in registry.plugins:
            kind = "built-in" if p.builtin else "third-party"
            print(f"{p.name}\t{p.distribution} {p.version}\t{kind}\t{p.module}")
            for what, names in sorted(p.provides.items()):
                print(f"    {what}: {', '.join(names) if names else '-'}")
        for name in registry.failed:
            print(f"{name}\tFAILED TO LOAD")
        return 0
    if args.what == "models":
        from avhb.model.presets import load_presets

        for name, preset in sorted(load_presets(registry).items()):
            print(f"{name}\t{preset.get('backend', '')}\t{preset.get('hub_id', '')}\t{preset.get('context', '')}"
                  f"\t{_takes(preset)}")
        return 0
    if args.what == "judges":
        return _list_judges(registry)
    if args.what == "backends":
        return _list_backends(registry, args.names, args.json)
    for name in registry.names(args.what):
        print(f"{name}\t{registry.entries[args.what][name]}")
    return 0


def _takes(preset: dict) -> str:
    """What a preset says its model takes besides text (``avhb list
    models``' last column): ``takes images 64, video, audio``."""
    caps = preset.get("capabilities") or {}
    kinds = [f"images {caps['images']}" if caps.get("images") else "",
             "video" if caps.get("video") else "", "audio" if caps.get("audio") else ""]
    return "takes " + (", ".join(k for k in kinds if k) or "text only")


def _list_backends(registry, names: list[str], as_json: bool) -> int:
    """``avhb list backends [NAME...]``: each backend's ``name<TAB>import
    path``, then its arguments, one indented line each (name, type and
    default, what it does: :mod:`avhb.model.backend_reference`).  Loading
    a backend's class imports its module, not its engine."""
    from avhb.model.backend_reference import argument_lines
    from avhb.model.backend_reference import as_json as arguments_json

    for name in names:
        registry.path("backends", name)  # an unknown name: one line naming the known ones
    out: dict[str, dict] = {}
    for name in names or registry.names("backends"):
        path = registry.entries["backends"][name]
        try:
            cls = registry.load("backends", name)
        except Exception as exc:  # a plugin backend that cannot be imported here
            lines, declared = [f"(cannot load: {type(exc).__name__}: {exc})".splitlines()[0]], None
        else:
            lines, declared = argument_lines(cls), arguments_json(cls)
        if as_json:
            out[name] = {"path": path, "arguments": declared}
            continue
        print(f"{name}\t{path}")
        for line in lines:
            print(f"    {line}")
    if as_json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


def _tags(index) -> dict[str, list[str]]:
    """tag -> the tasks carrying it (from the task index)."""
    tags: dict[str, list[str]] = {}
    for name, info in sorted(index.tasks.items()):
        for tag in info.get("tags") or []:
            tags.setdefault(tag, []).append(name)
    return tags


def list_index(what: str, registry=None, as_json: bool = False) -> int:
    """``avhb list tasks|groups|tags`` (also lm-eval's ``--tasks list``,
    ``list_groups``, ``list_tags``): one line each, from the task index."""
    from avhb.taskdef.index import build_index

    index = build_index(registry)
    for err in index.errors:
        print(f"avhb: warning: {err}", file=sys.stderr)
    if what == "tags":
        tags = _tags(index)
        if as_json:
            print(json.dumps(tags, indent=1))
        else:
            out = [f"{tag}\t{len(tasks)} tasks" for tag, tasks in sorted(tags.items())]
            sys.stdout.write("\n".join(out) + ("\n" if out else ""))
        return 0
    rows = index.tasks if what == "tasks" else index.groups
    if as_json:
        print(json.dumps(rows, indent=1))
    elif what == "tasks":
        out = [f"{name}\t{info['benchmark']}\t{','.join(info['tags'])}" for name, info in sorted(rows.items())]
        sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    else:
        for name in sorted(rows):
            print(f"{name}\t{len(index.group_members(name))} tasks")
    return 0


def _list_kinds(registry) -> int:
    """``avhb list`` alone: each kind ``avhb list WHAT`` takes, with its count."""
    from avhb.taskdef.index import build_index

    index = build_index(registry)
    from avhb.model.presets import load_presets

    counts = {"tasks": len(index.tasks), "groups": len(index.groups), "tags": len(_tags(index)),
              "models": len(load_presets(registry)), "plugins": len(registry.plugins),
              # what can fill --judge ROLE=...: the judge kinds plugins add, and any backend
              "judges": len(registry.names("judges")) + len(registry.names("backends"))}
    for what in LISTABLE:
        n = counts[what] if what in counts else len(registry.names(what))
        print(f"avhb list {what}\t{n}")
    return 0


def _list_judges(registry) -> int:
    """Judge kinds from plugins, the fact that any backend judges, the roles
    the installed tasks declare, and the reply parsers."""
    from avhb.score.judge_replies import parser_names
    from avhb.taskdef.index import build_index

    kinds = registry.names("judges")
    if kinds:  # one "name<TAB>import path" line each, as for every other kind
        for name in kinds:
            print(f"{name}\t{registry.entries['judges'][name]}")
    else:
        print("no judge plugins installed; any backend can judge")
    print(f"any backend judges a role: --judge ROLE=BACKEND[:NAME] (backends: {', '.join(registry.names('backends'))})")
    roles: dict[str, list[str]] = {}
    for task, info in build_index(registry).tasks.items():
        for role in info.get("judges") or []:
            roles.setdefault(role, []).append(task)
    if roles:
        print("roles the installed tasks declare:")
        for role, tasks in sorted(roles.items()):
            shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
            print(f"  {role}\t{len(tasks)} tasks ({shown})")
    print(f"reply parsers: {', '.join(parser_names())}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", choices=LISTABLE, help="what to list (alone: each kind with its count)")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="backends only: just these (each with its arguments, one line each)")
    p.add_argument("--json", action="store_true")
    add_flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
