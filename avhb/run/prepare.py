"""``avhb prepare TASK...``: fetch each task's data ahead of a run, so that
runs on nodes without network read only local files.  A task's metrics are
built too: a metric that fetches what it needs when built (an ``evaluate``
module from the Hub) then finds it in the cache offline, and says so through
its ``prepare()`` line."""
from __future__ import annotations

import sys
from pathlib import Path

from avhb.data.sources import BUILDERS
from avhb.errors import UserError
from avhb.registry import get_registry
from avhb.run.task import Task
from avhb.taskdef.index import build_index, load_task


def prepare_tasks(names: list[str], data_dir: str | None = None) -> int:
    from avhb.data.hub import dataset_dir, default_data_dir, snapshot

    index = build_index()
    tasks, _ = index.resolve(names)
    root = Path(data_dir) if data_dir else default_data_dir()
    done: set[tuple[str, str]] = set()
    failures = 0
    for name in tasks:
        task = Task(load_task(index, name), get_registry())
        metric_lines = [line for m in task.metrics() if (line := getattr(m, "prepare", lambda: None)())]
        for line in metric_lines:
            print(f"{task.name}: {line}")
        prep = task.cfg.get("prepare") or {}
        repo = task.cfg.get("dataset_path")
        if repo in BUILDERS and "function" not in prep:
            files = (task.cfg.get("dataset_kwargs") or {}).get("data_files") or \
                (task.cfg.get("dataset_kwargs") or {}).get("data_dir")
            print(f"{task.name}: no preparation needed: datasets' {repo!r} builder reads its local files "
                  f"({files}) when the task runs")
            continue
        revision = task.cfg.get("revision", "main")
        if "function" in prep:
            key = ("hook", prep["function"] + task.cfg.benchmark)
            if key in done:
                continue
            dest = root / (task.cfg.benchmark or task.name)
            result = task.hook(prep["function"])(dest, task.cfg.config)
            failed = list(getattr(result, "failed", []) or [])
            failures += len(failed)
            print(f"{task.name}: {dest} ({len(failed)} items could not be fetched; see its manifest)" if failed
                  else f"{task.name}: {dest}")
        elif repo:
            key = (repo, revision)
            if key in done:
                continue
            local = dataset_dir(repo, revision, root)
            snapshot(repo, revision, prep.get("allow_patterns"), local)
            print(f"{task.name}: {repo}@{revision} -> {local}")
        elif metric_lines:
            continue
        else:
            raise UserError(f"task {name!r} declares no data source to prepare (no dataset_path or prepare hook)")
        done.add(key)
    if data_dir:
        print(f"runs read prepared data from $AVHB_DATA_DIR: export AVHB_DATA_DIR={root}", file=sys.stderr)
    if failures:
        print(f"avhb: {failures} items could not be fetched", file=sys.stderr)
    return 1 if failures else 0
