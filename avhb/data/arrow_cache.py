"""A Hub dataset in ``datasets``' own Arrow cache, read offline as
lm-eval reads it.

``datasets.load_dataset("ORG/NAME", CONFIG)`` keeps what it built under
``$HF_DATASETS_CACHE`` (else ``$HF_HOME/datasets``, else
``~/.cache/huggingface/datasets``) as
``ORG___<name in snake case>/<config>/<version>/<commit>/`` -- a
``dataset_info.json`` (its features and splits) and one or more
``<name>-<split>[-NNNNN-of-NNNNN].arrow`` files -- and, offline, loads the
most recently written such folder of the config whatever the revision
asked.  avhb finds the same folder (a config given as ``dataset_name``,
else ``default``, else the only one cached), with one difference: a task
that pins a commit hash as its revision reads that commit's folder or
none.  The folder must hold the split the task evaluates, with every
Arrow file its ``dataset_info.json`` lists; it is read through
``datasets``' own cache builder for exactly that folder, so the rows and
features are the ones ``load_dataset`` gives."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb.data.hub_cache import COMMIT
from avhb.errors import UserError


@dataclass(frozen=True)
class CachedArrow:
    """One ``<repo>/<config>/<version>/<commit>`` folder of the Arrow cache."""

    folder: Path

    @property
    def commit(self) -> str:
        return self.folder.name

    @property
    def version(self) -> str:
        return self.folder.parent.name

    @property
    def config(self) -> str:
        return self.folder.parent.parent.name

    @property
    def cache(self) -> Path:
        return self.folder.parents[3]

    @property
    def dataset_name(self) -> str:
        return self.folder.parents[2].name.rpartition("___")[2]


def arrow_cache_dir() -> Path:
    """``datasets``' cache as the environment says now (it reads it once,
    at import)."""
    if os.environ.get("HF_DATASETS_CACHE"):
        return Path(os.environ["HF_DATASETS_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "datasets"


def _repo_dir(cache: Path, repo_id: str) -> Path:
    from avhb.data.hf_datasets import offline_datasets

    offline_datasets()
    from datasets.naming import camelcase_to_snakecase

    parts = repo_id.split("/")
    parts[-1] = camelcase_to_snakecase(parts[-1])
    return cache / "___".join(parts)


def _info(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "dataset_info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_arrow(repo_id: str, config: str | None, revision: str, split: str,
               cache: Path | None = None) -> tuple[CachedArrow | None, str]:
    """The Arrow-cache folder of ``repo_id``'s ``config`` that holds
    ``split`` (module docstring), or None and why not (one phrase)."""
    cache = cache or arrow_cache_dir()
    repo = _repo_dir(cache, repo_id)
    if not repo.is_dir():
        return None, f"datasets' cache ({cache}) has no {repo_id}"
    names = sorted(p.name for p in repo.iterdir() if p.is_dir())
    name = config or ("default" if "default" in names else names[0] if len(names) == 1 else None)
    if name is None or name not in names:
        return None, (f"datasets' cache has {repo_id} but not its config {name or config!r} "
                      f"(it has {', '.join(names) or 'none'})")
    found = [f for f in (repo / name).glob("*/*") if f.is_dir() and (_info(f) or {}).get("config_name") == name]
    if COMMIT.match(revision):
        found = [f for f in found if f.name == revision]
        if not found:
            return None, f"datasets' cache has {repo_id} ({name}) but not its commit {revision[:12]}"
    if not found:
        return None, f"datasets' cache has no finished build of {repo_id} ({name})"
    folder = max(found, key=lambda f: f.stat().st_mtime)  # datasets' rule offline: the latest build
    splits = (_info(folder) or {}).get("splits") or {}
    if split not in splits:
        return None, (f"datasets' cache has {repo_id} ({name}) without split {split!r} "
                      f"(it has {', '.join(sorted(splits)) or 'none'})")
    missing = [f.name for f in _arrow_files(CachedArrow(folder), split, splits[split]) if not f.is_file()]
    if missing:
        return None, f"datasets' cache of {repo_id} ({name}) lacks {', '.join(missing[:3])}"
    return CachedArrow(folder), ""


def _arrow_files(found: CachedArrow, split: str, info: dict[str, Any]) -> list[Path]:
    from datasets.naming import filenames_for_dataset_split

    names = filenames_for_dataset_split(str(found.folder), found.dataset_name, split, "arrow",
                                        info.get("shard_lengths"))
    return [Path(n) for n in names]


def load_arrow(folder: Path, repo_id: str, split: str, task: str) -> Any:
    """Split ``split`` of the cached build in ``folder``, as a
    ``datasets.Dataset`` (read through ``datasets``' cache builder)."""
    from avhb.data.hf_datasets import first_line, offline_datasets

    offline_datasets()
    from datasets.packaged_modules.cache.cache import Cache

    found = CachedArrow(folder)
    try:
        builder = Cache(cache_dir=str(found.cache), dataset_name=found.dataset_name, repo_id=repo_id,
                        config_name=found.config, version=found.version, hash=found.commit)
        if Path(builder.cache_dir) != folder:
            raise UserError(f"task {task!r}: datasets would read {builder.cache_dir}, not the cached {folder}")
        return builder.as_dataset(split=split)
    except UserError:
        raise
    except Exception as exc:  # datasets raises many types for a cache it cannot read
        raise UserError(f"task {task!r}: datasets cannot read its cached {repo_id} ({folder}): "
                        f"{first_line(exc)}") from None
