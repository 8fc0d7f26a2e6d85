"""``avhb show TASK``: a task's (or a group's) resolved configuration."""
from __future__ import annotations

import argparse

from avhb.cli.parsing import add_flag


def command(args, argv) -> int:
    import yaml

    from avhb.taskdef.index import build_index, load_task

    index = build_index()
    if args.task in index.groups and args.task not in index.tasks:
        info = index.groups[args.task]
        members = index.group_members(args.task)
        print(f"# group {args.task} (from {info['file']})")
        print(yaml.safe_dump({"group": args.task, "task": list(info["tasks"]), "aggregate_metric_list": info["aggregate"],
                              "resolved_tasks": members}, sort_keys=False, allow_unicode=True))
        return 0
    task = load_task(index, args.task)
    print(f"# {task.name} (from {task.file})")
    print(yaml.safe_dump(task.config, sort_keys=False, allow_unicode=True))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task")
    add_flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
