"""A dataset already in the Hugging Face hub cache, read offline.

``huggingface-cli download --repo-type dataset ORG/NAME`` (``hf
download``) and ``snapshot_download`` leave a repo in the hub cache
(``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``) as::

    datasets--ORG--NAME/refs/<revision>          the commit a branch or tag named
    datasets--ORG--NAME/snapshots/<commit>/...   the files, links into blobs/

The cache *holds a task's revision* when (1) the revision names a commit:
a commit hash given as the revision is that commit, any other revision
is the commit its ``refs/<revision>`` file names (no refs file: not held,
since only the Hub knows what a branch points at); (2) that commit's
snapshot folder exists; and (3) every data file the task reads is there.
The files the task reads are the ones ``datasets`` would read for its
config (``dataset_name``) and the splits it evaluates, resolved by
``datasets``' own rules (the README's ``configs``, else the file names);
a split with no file, a link whose blob is gone, or a sharded file with a
shard missing (``test-00001-of-00003.parquet`` without ``-00002-``) makes
the snapshot partial: it is not used, and the message that the data is
missing says what is.  Nothing is hashed here (a blob is named by its
checksum and written before its link: a present link is a finished
download)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from avhb.paths import hf_hub_cache

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHARD = re.compile(r"^(?P<head>.*)-(?P<index>\d+)-of-(?P<total>\d+)(?P<tail>\.[^/]*)$")


@dataclass(frozen=True)
class CachedSnapshot:
    """A commit's snapshot folder in the hub cache."""

    folder: Path
    commit: str


def repo_folder(repo_id: str, repo_type: str = "dataset", cache: Path | None = None) -> Path:
    """``<hub cache>/datasets--ORG--NAME`` (the hub cache's own naming)."""
    return (cache or hf_hub_cache()) / f"{repo_type}s--{repo_id.replace('/', '--')}"


def find_snapshot(repo_id: str, revision: str, cache: Path | None = None) -> tuple[CachedSnapshot | None, str]:
    """The snapshot of ``repo_id`` at ``revision`` in the hub cache, or None
    and why not (one phrase)."""
    repo = repo_folder(repo_id, cache=cache)
    if not repo.is_dir():
        return None, f"the hub cache ({repo.parent}) has no {repo_id}"
    if COMMIT.match(revision):
        commit = revision
    else:
        ref = repo / "refs" / revision
        try:
            commit = ref.read_text(encoding="utf-8").strip()
        except OSError:
            return None, f"the hub cache has {repo_id} but no refs/{revision} (which commit {revision!r} is)"
        if not COMMIT.match(commit):
            return None, f"{ref} does not hold a commit hash"
    folder = repo / "snapshots" / commit
    if not folder.is_dir():
        return None, f"the hub cache has {repo_id} but not its commit {commit[:12]} ({revision})"
    return CachedSnapshot(folder, commit), ""


def missing_files(folder: Path, config: str | None, splits: Sequence[str]) -> list[str]:
    """What ``folder`` (a dataset repo's files) lacks for ``datasets`` to
    read ``config``'s ``splits`` from it (module docstring): every split of
    that config, and of the README's first config (``datasets`` reads the
    file format from it), with a file for each of its patterns and every
    shard of each sharded file.  Empty: nothing is missing."""
    from avhb.data.hf_datasets import offline_datasets

    offline_datasets()
    from datasets.data_files import sanitize_patterns
    from datasets.load import LocalDatasetModuleFactory
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    readme = folder / "README.md"
    try:
        card = DatasetCard.load(str(readme)).data if readme.is_file() else DatasetCardData()
        declared = MetadataConfigs.from_dataset_card_data(card)
        default = declared.get_default_config_name() if declared else None
    except Exception as exc:  # a README datasets cannot read
        return [f"a readable README.md ({type(exc).__name__}: {str(exc).strip()[:200]})"]
    out: list[str] = []
    if declared:
        name = config or default
        if name not in declared:
            return [f"config {config!r} (its README has {', '.join(declared)})" if config
                    else f"a default config (its README has {', '.join(declared)}: the task names none)"]
        first = next(iter(declared))
        for cname in dict.fromkeys([name, first]):
            spec = declared[cname]
            if "data_files" not in spec:
                continue  # a data_dir config: its files are found by datasets' own patterns
            patterns = sanitize_patterns(spec["data_files"])
            out += [f"split {s!r} (config {name!r} has {', '.join(patterns)})" for s in splits
                    if cname == name and s not in patterns]
            for split, pats in patterns.items():
                out += _split_missing(folder, cname, split, [str(p) for p in pats])
    if out:
        return out
    try:
        module = LocalDatasetModuleFactory(str(folder)).get_module()
    except Exception as exc:  # datasets raises many types for a folder it cannot read
        return [f"a dataset datasets can read ({type(exc).__name__}: {str(exc).strip()[:200]})"]
    if declared:
        return out
    configs = {c.name: c for c in module.builder_configs_parameters.builder_configs}
    inferred = configs.get(config or "default") or (next(iter(configs.values())) if len(configs) == 1 else None)
    if inferred is None:
        return [f"config {config!r} (it has {', '.join(configs)})"]
    files = inferred.data_files or {}
    for split in splits:
        listed = [str(f) for f in files.get(split) or []]
        out += [f"split {split!r} (its files give {', '.join(files) or 'none'})"] if not listed else \
            missing_shards(listed, folder)
    return out


def _split_missing(folder: Path, config: str, split: str, patterns: list[str]) -> list[str]:
    """A README split's patterns that match no file, and its missing shards."""
    from datasets.data_files import resolve_pattern

    out, found = [], []
    for pattern in patterns:
        try:
            matched = resolve_pattern(pattern, str(folder))
        except FileNotFoundError:
            matched = []
        if not matched:
            out.append(f"{pattern} (split {split!r} of config {config!r})")
        found += [str(m) for m in matched]
    return out + missing_shards(found, folder)


def missing_shards(files: Sequence[str], folder: Path) -> list[str]:
    """The shards absent from each ``NAME-<i>-of-<n>.EXT`` family in
    ``files`` (paths relative to ``folder``)."""
    families: dict[tuple[str, str, str, int], set[int]] = {}
    for f in files:
        m = _SHARD.match(f)
        if m:
            key = (m["head"], m["total"], m["tail"], len(m["index"]))
            families.setdefault(key, set()).add(int(m["index"]))
    out = []
    for (head, total, tail, width), present in sorted(families.items()):
        for i in range(int(total)):
            if i not in present:
                out.append(os.path.relpath(f"{head}-{i:0{width}d}-of-{total}{tail}", folder))
    return out
