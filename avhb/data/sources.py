"""Where a task's data comes from: its sample pack, a local copy of the
upstream release (``--data NAME=PATH``), or a prepared Hub snapshot.  All
three are local folders in the upstream layout, read by the same loader."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.taskdef.config import TaskConfig


@dataclass
class DataSource:
    root: Path  # a folder, or one data file (``--data NAME=FILE.jsonl``)
    kind: str  # "sample" | "local" | "hub"
    revision: str | None = None

    @property
    def media_root(self) -> Path:
        """The folder a sample's relative media paths resolve under: the
        data folder, or the data file's folder."""
        return self.root if not self.root.is_file() else self.root.parent


def parse_data_flags(items: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UserError(f"--data {item!r}: expected NAME=PATH (NAME is a benchmark, group or task)")
        out[name.strip()] = Path(path.strip()).expanduser()
    return out


def data_flag_for(task: TaskConfig, data: dict[str, Path], groups: list[str] = ()) -> str | None:
    """The ``--data`` NAME a task reads: the first of its name, its pack's
    data name, its tags and its groups that was given; None when none was."""
    return next((n for n in [task.name, task.data_name, *task.tags, *groups] if n in data), None)


def resolve_source(task: TaskConfig, data: dict[str, Path], sample_data: bool, groups: list[str] = ()) -> DataSource:
    name = data_flag_for(task, data, groups)
    if name is not None:
        root = data[name]
        if not root.exists():
            raise UserError(f"--data {name}={root}: no such file or folder")
        return DataSource(root, "local")
    if sample_data:
        rel = task.get("sample_data")
        if not rel:
            raise UserError(f"task {task.name!r} ships no sample pack")
        root = task.pack_dir / rel
        if not root.exists():
            raise UserError(f"task {task.name!r}: sample pack {root} is missing (re-install avhb)")
        return DataSource(root, "sample")
    if "function" in (task.get("prepare") or {}):  # fetched by the pack's own hook (`avhb prepare`)
        from avhb.data.hub import default_data_dir

        local = default_data_dir() / (task.benchmark or task.name)
        if (local / "manifest.json").is_file():
            return DataSource(local, "prepared")
        raise UserError(
            f"task {task.name!r}: its data is not on this machine; fetch it with `avhb prepare {task.name}`, "
            f"point at a local copy with `--data {task.data_name or task.name}=PATH`, or run the sample pack "
            "with `--sample-data`")
    repo = task.get("dataset_path")
    if repo:
        from avhb.data.hub import dataset_dir, is_complete

        revision = task.get("revision", "main")
        local = dataset_dir(repo, revision)
        if is_complete(local, repo, revision):
            return DataSource(local, "hub", revision)
        raise UserError(
            f"task {task.name!r}: data {repo}@{revision} is not on this machine; fetch it with "
            f"`avhb prepare {task.name}`, point at a local copy with `--data {task.data_name or task.name}=PATH`, "
            f"or run the sample pack with `--sample-data`")
    raise UserError(f"task {task.name!r}: no data: pass --data {task.data_name or task.name}=PATH or --sample-data")


def default_loader(root: Path, task: TaskConfig) -> list[dict[str, Any]]:
    """A JSON/JSONL/CSV file, or a folder readable by ``datasets`` (local
    parquet/json/csv files), split ``test_split``."""
    split = task.get("test_split", "test")
    kwargs = dict(task.get("dataset_kwargs") or {})
    if root.is_file():
        return _read_records(root)
    data_files = kwargs.pop("data_files", None)
    if isinstance(data_files, str) and (root / data_files).is_file():
        return _read_records(root / data_files)
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # read at import: set before it
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # "Generating split" bars are not avhb's output
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()

    try:
        ds = datasets.load_dataset(str(root), task.get("dataset_name"), split=split, data_files=data_files, **kwargs)
    except Exception as exc:  # datasets raises many types for unreadable local data
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise UserError(f"{root}: cannot load split {split!r} for task {task.name!r}: {first}") from None
    return [dict(row) for row in ds]


def _read_records(path: Path) -> list[dict[str, Any]]:
    """The rows of a .jsonl, .json or .csv data file; every row must be an
    object.  Errors name the file and the (1-based) line."""
    try:
        if path.suffix == ".jsonl":
            return _read_jsonl(path)
        if path.suffix == ".json":
            raw = path.read_bytes()
            try:
                data = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                line = raw[: exc.start].count(b"\n") + 1
                raise UserError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None
            except ValueError as exc:
                raise UserError(f"{path}:{getattr(exc, 'lineno', 1)}: not valid JSON: {getattr(exc, 'msg', exc)}") from None
            if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
                raise UserError(f"{path}: expected a JSON array of objects (one per sample)")
            return data
        if path.suffix == ".csv":
            import csv

            try:
                with open(path, newline="", encoding="utf-8") as fh:
                    return list(csv.DictReader(fh))
            except UnicodeDecodeError as exc:
                raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None
            except csv.Error as exc:
                raise UserError(f"{path}: not valid CSV: {exc}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read data: {exc.strerror or exc}") from None
    raise UserError(f"{path}: unsupported data file (expected .json, .jsonl or .csv)")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserError(f"{path}:{lineno}: not UTF-8 text (byte {exc.start} of the line)") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise UserError(f"{path}:{lineno}: not valid JSON: {getattr(exc, 'msg', exc)} "
                                f"(column {getattr(exc, 'colno', '?')})") from None
            if not isinstance(row, dict):
                raise UserError(f"{path}:{lineno}: a row must be a JSON object (one sample), got "
                                f"{type(row).__name__}")
            rows.append(row)
    return rows
