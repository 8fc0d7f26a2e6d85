"""``avhb prepare TASK...``: fetch each task's data ahead of a run, so that
runs on nodes without network read only local files.  A task's metrics are
built too: a metric that fetches what it needs when built (an ``evaluate``
module from the Hub) then finds it in the cache offline, and says so through
its ``prepare()`` line."""
from __future__ import annotations

import sys
from pathlib import Path

from avhb.data.sources import BUILDERS, hub_revision, task_splits
from avhb.errors import UserError
from avhb.registry import get_registry
from avhb.run.task import Task
from avhb.taskdef.index import build_index, load_task


def _prepare_repo(task: Task, repo: str, revision: str, root: Path, patterns: list[str] | None,
                  done: set[tuple[str, str]]) -> int:
    """A Hub dataset task: avhb's verified snapshot of the repo (none when
    the hub cache already holds what the task reads), then an lmms-eval
    video task's archives unpacked where its hooks read them
    (:mod:`avhb.data.lmms_media`); returns the number of failures."""
    from avhb.data.hub import dataset_dir, is_complete, snapshot
    from avhb.data.hub_cache import find_snapshot, missing_files
    from avhb.data.lmms_media import media_spec, unpack

    spec = media_spec(task.cfg.config)
    local = dataset_dir(repo, revision, root)
    if spec is None and not is_complete(local, repo, revision):
        cached, _ = find_snapshot(repo, revision)
        if cached is not None and not missing_files(cached.folder, task.cfg.get("dataset_name"),
                                                    task_splits(task.cfg)[0]):
            print(f"{task.name}: {repo}@{revision} is in the hub cache ({cached.folder}): nothing fetched")
            return 0
    if (repo, revision) not in done:
        snapshot(repo, revision, patterns, local)
        done.add((repo, revision))
        print(f"{task.name}: {repo}@{revision} -> {local}")
    if spec is None:
        return 0
    try:
        print(f"{task.name}: media {unpack(spec, local)}")
    except UserError as exc:
        print(f"{task.name}: media not unpacked: {exc}", file=sys.stderr)
        return 1
    return 0


def prepare_tasks(names: list[str], data_dir: str | None = None) -> int:
    from avhb.data.hub import default_data_dir

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
        custom = task.cfg.get("custom_dataset")
        if isinstance(custom, dict) and "function" in custom:
            print(f"{task.name}: no preparation needed: its custom_dataset hook {custom['function']} makes the data "
                  "when the task runs")
            continue
        if repo in BUILDERS and "function" not in prep:
            files = (task.cfg.get("dataset_kwargs") or {}).get("data_files") or \
                (task.cfg.get("dataset_kwargs") or {}).get("data_dir")
            print(f"{task.name}: no preparation needed: datasets' {repo!r} builder reads its local files "
                  f"({files}) when the task runs")
            continue
        revision = hub_revision(task.cfg)
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
            failures += _prepare_repo(task, str(repo), revision, root, prep.get("allow_patterns"), done)
            continue
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
