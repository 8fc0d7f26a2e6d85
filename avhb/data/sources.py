"""Where a task's data comes from, looked for in this order (the first
that holds it is used, and run.json records it as the task's data source:
``kind``, ``root``, ``revision`` and, from a Hugging Face cache, ``commit``):

1. ``--data NAME=PATH`` (kind ``local``): a local copy of the upstream
   release, a folder in its layout or one data file; NAME is the task, its
   pack (:func:`data_flag_for`), a tag or a group.
2. ``--sample-data`` (``sample``): the pack's sample.
3. A ``datasets`` builder over local files (``builder``: ``dataset_path:
   json`` with ``dataset_kwargs: {data_files: ...}``, as lm-eval loads
   them; below).
4. A pack's own ``prepare`` hook (``prepared``): what ``avhb prepare``
   fetched into ``<data_dir>/<pack>`` (its ``manifest.json``).
5. A Hub dataset (``dataset_path: ORG/NAME``, ``revision`` or
   ``dataset_kwargs.revision``, default ``main``), offline, from the first
   of:

   a. avhb's own verified snapshot, ``<data_dir>/ORG__NAME/<revision>``
      with its completion marker (``hub``; :mod:`avhb.data.hub`, written by
      ``avhb prepare``);
   b. the Hugging Face hub cache, when it holds the revision with every
      data file of the task's config and splits (``hub-cache``, the root
      its ``snapshots/<commit>`` folder; :mod:`avhb.data.hub_cache`);
   c. ``datasets``' own Arrow cache, as lm-eval reads it offline
      (``datasets-cache``, the root the build's folder;
      :mod:`avhb.data.arrow_cache`).

   The first two, like ``--data`` and the sample, are folders of the
   repo's files, read by the same loader (:func:`default_loader`).

None of them: a one-line error naming the task, the data, why each cache
did not hold it, and the commands that get it (``avhb prepare TASK``,
``--data NAME=PATH`` with the NAME that works, ``--sample-data``).

A task with lm-eval's ``custom_dataset`` hook reads none of them (kind
``custom``, the root its folder): the hook makes the data when the task
loads it (:meth:`avhb.run.task.Task.load_docs`), over any ``dataset_path``,
as lm-eval calls it.

Builder tasks: ``dataset_path`` names one of ``datasets``' packaged builders
(:data:`BUILDERS`); ``dataset_kwargs`` passes ``data_files`` (a path or glob,
a list, or a mapping of split -> paths) and ``data_dir`` to it, with
``dataset_name``.  Relative paths resolve as ``datasets`` resolves them for
lm-eval: ``data_files`` under ``data_dir`` when given, else under the
working directory; ``data_dir`` itself under the working directory.  avhb
resolves them once, when the run starts, and records the folder it resolved
against (``base``), so ``avhb score`` elsewhere reads the same files.
Nothing is downloaded: the files must be on this machine.  Relative media
paths in such a task's samples resolve under ``data_dir``, else the folder
of its (first) data file."""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from avhb.data.hf_datasets import first_line as _first_line, offline_datasets as _datasets
from avhb.data.jsonl_rows import JsonlRows
from avhb.errors import UserError
from avhb.taskdef.config import TaskConfig


# datasets' packaged builders that read local files (``dataset_path: json``); the installed
# datasets must have the one a task names (videofolder came later than the others)
BUILDERS = frozenset({"json", "csv", "parquet", "text", "arrow", "pandas", "imagefolder", "audiofolder",
                      "videofolder", "webdataset", "xml", "hdf5"})


# dataset_kwargs the harnesses read themselves and never pass to datasets.load_dataset (lmms-eval's media
# archives: avhb.data.lmms_media; cache_dir is datasets' cache only where no local folder is read)
HARNESS_KWARGS = frozenset({"video", "cache_dir", "force_download", "force_unzip", "local_files_only", "create_link",
                            "From_YouTube", "builder_script", "load_from_disk", "max_retries", "num_proc"})


@dataclass
class DataSource:
    root: Path  # a folder, or one data file (``--data NAME=FILE.jsonl``); a builder task: its media root
    kind: str  # "sample" | "local" | "hub" | "hub-cache" | "datasets-cache" | "prepared" | "builder" | "custom"
    revision: str | None = None
    builder: str | None = None  # kind "builder": the datasets builder (json, csv, parquet...)
    base: Path | None = None  # kind "builder": the folder relative data_dir / data_files resolved under
    commit: str | None = None  # kinds "hub-cache", "datasets-cache": the commit the cache holds
    media: Path | None = None  # an lmms-eval video task: the folder its hooks read videos from (lmms_media)

    @property
    def media_root(self) -> Path:
        """The folder a sample's relative media paths resolve under: the
        data folder, or the data file's folder."""
        return self.root if not self.root.is_file() else self.root.parent

    def to_json(self) -> dict[str, Any]:
        """As run.json records it (``from_json`` reads it back)."""
        out: dict[str, Any] = {"kind": self.kind, "root": str(self.root), "revision": self.revision}
        if self.builder:
            out.update(builder=self.builder, base=str(self.base))
        if self.commit:
            out["commit"] = self.commit
        if self.media:
            out["media"] = str(self.media)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "DataSource":
        base, media = data.get("base"), data.get("media")
        return cls(Path(data.get("root", ".")), data.get("kind", "local"), data.get("revision"),
                   data.get("builder"), Path(base) if base else None, data.get("commit"),
                   Path(media) if media else None)


def parse_data_flags(items: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UserError(f"--data {item!r}: expected NAME=PATH (NAME is a benchmark, group or task)")
        out[name.strip()] = Path(path.strip()).expanduser()
    return out


def data_flag_for(task: TaskConfig, data: dict[str, Path], groups: Sequence[str] = ()) -> str | None:
    """The ``--data`` NAME a task reads: the first of its name, its pack's
    data name, its tags and its groups that was given; None when none was."""
    return next((n for n in [task.name, task.data_name, *task.tags, *groups] if n in data), None)


def resolve_source(task: TaskConfig, data: dict[str, Path], sample_data: bool, groups: Sequence[str] = (),
                   base: Path | None = None) -> DataSource:
    """Where ``task``'s data is (module docstring); ``base``: the folder a
    builder task's relative paths resolve under (default: the working
    directory; ``avhb score`` passes the one its run recorded).  An
    lmms-eval video task's media folder must be there too
    (:func:`avhb.data.lmms_media.missing_media`); it is recorded with the
    source."""
    source = _resolve(task, data, sample_data, groups, base)
    if source.kind == "sample":
        return source
    from avhb.data.lmms_media import media_spec, missing_media

    spec = media_spec(task.config)
    if spec is None:
        return source
    repo_files = source.root if source.kind in ("hub", "hub-cache", "local") and source.root.is_dir() else None
    why = missing_media(task.name, task.config, repo_files)
    if why:
        raise UserError(why)
    source.media = spec.folder
    return source


def _resolve(task: TaskConfig, data: dict[str, Path], sample_data: bool, groups: Sequence[str],
             base: Path | None) -> DataSource:
    custom = task.get("custom_dataset")
    if isinstance(custom, dict) and "function" in custom:
        return DataSource(task.pack_dir, "custom")
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
    if task.get("dataset_path") in BUILDERS:  # local files through a datasets builder: nothing to fetch
        return builder_source(task, base or Path.cwd())
    if "function" in (task.get("prepare") or {}):  # fetched by the pack's own hook (`avhb prepare`)
        from avhb.data.hub import default_data_dir

        local = default_data_dir() / (task.benchmark or task.name)
        if (local / "manifest.json").is_file():
            return DataSource(local, "prepared")
        raise UserError(
            f"task {task.name!r}: its data is not on this machine; fetch it with `avhb prepare {task.name}`, "
            f"point at a local copy with `--data {data_hint(task, groups)}=PATH`, or run the sample pack "
            "with `--sample-data`")
    repo = task.get("dataset_path")
    if repo:
        return hub_source(task, str(repo), groups)
    raise UserError(f"task {task.name!r}: no data: pass --data {data_hint(task, groups)}=PATH or --sample-data")


def data_hint(task: TaskConfig, groups: Sequence[str] = ()) -> str:
    """The ``--data`` NAME a message offers for ``task``: one that
    :func:`data_flag_for` reads for it (its pack's data name, else its own
    name)."""
    for name in (task.data_name, task.name):
        if name and data_flag_for(task, {name: Path()}, groups) == name:
            return name
    return task.name


def hub_revision(task: TaskConfig) -> str:
    """The revision of a task's Hub dataset: ``revision``, else
    ``dataset_kwargs.revision`` (lmms-eval's spelling), else ``main``."""
    kwargs = task.get("dataset_kwargs") or {}
    return str(task.get("revision") or (kwargs.get("revision") if isinstance(kwargs, dict) else None) or "main")


def task_splits(task: TaskConfig) -> tuple[list[str], list[str]]:
    """(the split a task evaluates, the other splits it names: few-shot,
    training, validation)."""
    main = eval_split(task)
    others = [s for s in (task.get("fewshot_split"), task.get("training_split"), task.get("validation_split"))
              if s and s != main]
    return [main], list(dict.fromkeys(others))


def hub_source(task: TaskConfig, repo: str, groups: Sequence[str] = ()) -> DataSource:
    """A Hub dataset's data on this machine (module docstring, 5), else a
    ``UserError`` saying why each place did not hold it."""
    from avhb.data.arrow_cache import find_arrow
    from avhb.data.hub import dataset_dir, is_complete
    from avhb.data.hub_cache import find_snapshot, missing_files

    revision = hub_revision(task)
    local = dataset_dir(repo, revision)
    if is_complete(local, repo, revision):
        return DataSource(local, "hub", revision)
    config = task.get("dataset_name")
    splits, _ = task_splits(task)
    found, why_hub = find_snapshot(repo, revision)
    if found is not None:
        missing = missing_files(found.folder, config, splits)
        if not missing:
            return DataSource(found.folder, "hub-cache", revision, commit=found.commit)
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        why_hub = (f"the hub cache's snapshot {found.folder} is partial: it lacks "
                   f"{', '.join(missing[:3])}{more}")
    arrow, why_arrow = find_arrow(repo, config, revision, splits[0])
    if arrow is not None:
        return DataSource(arrow.folder, "datasets-cache", revision, commit=arrow.commit)
    raise UserError(
        f"task {task.name!r}: data {repo}@{revision} is not on this machine ({why_hub}; {why_arrow}); "
        f"fetch it with `avhb prepare {task.name}`, point at a local copy with "
        f"`--data {data_hint(task, groups)}=PATH`, or run the sample pack with `--sample-data`")


def eval_split(task: TaskConfig) -> str:
    """The split a task evaluates: ``test_split``, else ``validation_split``
    (lm-eval's order), else ``test``."""
    return task.get("test_split") or task.get("validation_split") or "test"


def _resolved(path: str, base: Path) -> str:
    return path if os.path.isabs(os.path.expanduser(path)) else str(base / path)


def builder_source(task: TaskConfig, base: Path) -> DataSource:
    """The data of a builder task (module docstring): every ``data_files``
    entry must match a file, else a ``UserError`` saying where it was looked
    for (and that the task's folder has it, when it does)."""
    kwargs = task.get("dataset_kwargs") or {}
    data_dir = kwargs.get("data_dir")
    under = Path(_resolved(os.path.expanduser(data_dir), base)) if data_dir else base
    if data_dir and not under.is_dir():
        raise UserError(f"task {task.name!r}: dataset_kwargs.data_dir {data_dir!r} is not a folder ({under}; "
                        f"relative to the working directory, as datasets reads it)")
    files = _data_file_list(kwargs.get("data_files"))
    found: list[Path] = []
    for name in files:
        full = _resolved(os.path.expanduser(name), under)
        matches = sorted(glob.glob(full, recursive=True))
        if not matches:
            beside = task.pack_dir / name
            hint = (f"; the task's folder has it ({beside}): run from {task.pack_dir} or give an absolute path"
                    if not os.path.isabs(name) and (beside.exists() or glob.glob(str(beside))) else "")
            where = "data_dir" if data_dir else "the working directory"
            raise UserError(f"task {task.name!r}: data file {name!r} not found under {where} {under} "
                            f"(datasets resolves relative data_files there, as lm-eval reads them){hint}")
        found.extend(Path(m) for m in matches)
    if not files and not data_dir:
        raise UserError(f"task {task.name!r}: dataset_path {task.get('dataset_path')!r} is a datasets builder: "
                        "name its files in dataset_kwargs.data_files (or a folder in dataset_kwargs.data_dir)")
    root = under if data_dir else found[0].parent
    return DataSource(root, "builder", builder=str(task.get("dataset_path")), base=base)


def _data_file_list(data_files: Any) -> list[str]:
    """Every path of a ``data_files`` value (a path, a list, or split -> path(s))."""
    if data_files is None:
        return []
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, dict):
        return [f for v in data_files.values() for f in _data_file_list(v)]
    return [str(f) for f in data_files]


def _resolve_data_files(data_files: Any, under: Path) -> Any:
    if isinstance(data_files, str):
        return _resolved(os.path.expanduser(data_files), under)
    if isinstance(data_files, dict):
        return {k: _resolve_data_files(v, under) for k, v in data_files.items()}
    if isinstance(data_files, (list, tuple)):
        return [_resolve_data_files(v, under) for v in data_files]
    return data_files




def load_builder(source: DataSource, task: TaskConfig) -> dict[str, Any]:
    """Every split of a builder task's data, as ``datasets.Dataset`` objects
    (what lm-eval hands a ``process_docs`` hook): ``datasets.load_dataset(
    builder, dataset_name, data_files=..., data_dir=..., **other
    dataset_kwargs)`` with the paths resolved under ``source.base``, offline."""
    datasets = _datasets()
    from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES

    if source.builder not in _PACKAGED_DATASETS_MODULES:
        raise UserError(f"task {task.name!r}: the installed datasets {datasets.__version__} has no "
                        f"{source.builder!r} builder")
    kwargs = dict(task.get("dataset_kwargs") or {})
    base = source.base or Path.cwd()
    if kwargs.get("data_dir"):
        kwargs["data_dir"] = _resolved(os.path.expanduser(kwargs["data_dir"]), base)
    under = Path(kwargs["data_dir"]) if kwargs.get("data_dir") else base
    if "data_files" in kwargs:
        kwargs["data_files"] = _resolve_data_files(kwargs["data_files"], under)
    kwargs.pop("trust_remote_code", None)  # no loading script runs here (datasets 4 dropped them too)
    try:
        loaded = datasets.load_dataset(source.builder, task.get("dataset_name"), **kwargs)
    except Exception as exc:  # datasets raises many types for unreadable local data
        raise UserError(f"task {task.name!r}: datasets cannot read its {source.builder} data: "
                        f"{_first_line(exc)}") from None
    return dict(loaded.items())


def default_loader(root: Path, task: TaskConfig, split: str | None = None) -> Any:
    """A JSON/JSONL/CSV file (a list of rows), or a folder readable by
    ``datasets`` (local parquet/json/csv files; a ``datasets.Dataset``),
    split ``split`` (default: the evaluated one)."""
    split = split or eval_split(task)
    kwargs = {k: v for k, v in (task.get("dataset_kwargs") or {}).items() if k not in HARNESS_KWARGS}
    if root.is_file():
        return _read_records(root)
    data_files = kwargs.pop("data_files", None)
    if isinstance(data_files, str) and (root / data_files).is_file():
        return _read_records(root / data_files)
    datasets = _datasets()
    kwargs.setdefault("cache_dir", str(folder_cache(root)))
    try:
        ds = datasets.load_dataset(str(root), task.get("dataset_name"), split=split, data_files=data_files, **kwargs)
    except Exception as exc:  # datasets raises many types for unreadable local data
        raise UserError(f"{root}: cannot load split {split!r} for task {task.name!r}: {_first_line(exc)}") from None
    return ds


def folder_cache(root: Path) -> Path:
    """The ``datasets`` cache of one data folder: its own, under avhb's cache.
    ``datasets`` names a local folder's cache by the folder's last name and
    its README configs, so two snapshots at ``…/ORG__A/main`` and
    ``…/ORG__B/main`` with the same layout would share it (and one would be
    read as the other)."""
    from avhb.paths import cache_dir

    import hashlib

    key = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:20]
    return cache_dir() / "datasets-local" / f"{root.name}-{key}"


def _read_records(path: Path) -> Sequence[dict[str, Any]]:
    """The rows of a .jsonl, .json or .csv data file; every row must be an
    object.  Errors name the file and the (1-based) line.  A .jsonl file's
    rows are read when they are used (:class:`JsonlRows`)."""
    try:
        if path.suffix == ".jsonl":
            return JsonlRows(path)  # decoded again when a window needs them (avhb.data.jsonl_rows)
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
