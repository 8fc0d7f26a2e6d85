"""Files in the layouts Hub dataset repos use, made from rows in memory:
parquet shards as ``datasets`` writes them (its features in the schema's
metadata, so an ``Image`` or ``Sequence`` column reads back as the Hub's
does), JSON lines, and the README whose YAML front matter declares the
``configs:`` (config name, split, file pattern) that ``datasets.load_dataset
(path, name)`` resolves through the Hub API.

A repo is a ``dict`` of path -> bytes, what ``FakeHub.publish`` takes.
"""
from __future__ import annotations

import io
import json
from typing import Any

import yaml

Files = dict[str, bytes]


def _dataset(rows: list[dict[str, Any]], features: Any = None) -> Any:
    import datasets

    datasets.disable_progress_bars()
    return datasets.Dataset.from_list(rows, features=features)


def _parquet_bytes(ds: Any) -> bytes:
    buf = io.BytesIO()
    ds.to_parquet(buf)
    return buf.getvalue()


def parquet(rows: list[dict[str, Any]], features: Any = None) -> bytes:
    """One parquet shard of ``rows`` (``features``: a ``datasets.Features``,
    else inferred from the rows)."""
    return _parquet_bytes(_dataset(rows, features))


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def readme(configs: dict[str, dict[str, str]], title: str, default: str | None = None,
           infos: dict[str, Any] | None = None) -> bytes:
    """A dataset card declaring ``configs`` (config -> split -> path
    pattern) in its front matter, as the Hub's parquet repos have it, with
    ``dataset_info`` (features and split sizes) from ``infos`` (config ->
    ``datasets.DatasetInfo``) when given."""
    entries = []
    for name, splits in configs.items():
        entry: dict[str, Any] = {"config_name": name}
        if name == default:
            entry["default"] = True
        entry["data_files"] = [{"split": split, "path": path} for split, path in splits.items()]
        entries.append(entry)
    front: dict[str, Any] = {}
    if infos:
        from datasets.info import DatasetInfosDict
        from huggingface_hub import DatasetCardData

        card = DatasetCardData()
        DatasetInfosDict(infos).to_dataset_card_data(card)
        front["dataset_info"] = card.to_dict()["dataset_info"]
    front["configs"] = entries
    text = yaml.safe_dump(front, sort_keys=False)
    return f"---\n{text}---\n\n# {title}\n\nSynthetic rows for avhb's differential tests.\n".encode()


def shard(config: str, split: str) -> str:
    """The Hub's parquet shard name for one split of one config:
    ``<config>/<split>-00000-of-00001.parquet``."""
    return f"{config}/{split}-00000-of-00001.parquet"


def parquet_repo(title: str, configs: dict[str, dict[str, list[dict[str, Any]]]], features: Any = None,
                 folder: dict[str, str] | None = None, default: str | None = None) -> Files:
    """A repo with one parquet shard per (config, split) and the README
    declaring them with their features and sizes; ``folder`` maps a config
    to the folder holding its shards when it is not the config's own name
    (``data`` for single-config repos)."""
    import datasets

    files: Files = {}
    declared: dict[str, dict[str, str]] = {}
    infos: dict[str, Any] = {}
    for config, splits in configs.items():
        where = (folder or {}).get(config, config)
        declared[config] = {}
        sizes = datasets.SplitDict()
        for split, rows in splits.items():
            ds = _dataset(rows, features)
            files[shard(where, split)] = _parquet_bytes(ds)
            declared[config][split] = f"{where}/{split}-*"
            sizes.add(datasets.SplitInfo(name=split, num_bytes=ds.data.nbytes, num_examples=len(ds)))
        infos[config] = datasets.DatasetInfo(features=ds.features, splits=sizes, config_name=config)
    files["README.md"] = readme(declared, title, default, infos)
    return files
