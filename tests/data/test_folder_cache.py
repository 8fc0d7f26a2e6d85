"""Two data folders with the same last name and the same README configs
(avhb's snapshots ``…/ORG__A/main`` and ``…/ORG__B/main``) are read as
themselves: ``datasets`` alone names a local folder's cache by those two,
so the second would be read as the first."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from avhb.data.sources import default_loader
from avhb.taskdef.config import TaskConfig

README = ("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*.parquet\n"
          "---\n")


def _snapshot(root, rows):
    (root / "data").mkdir(parents=True)
    (root / "README.md").write_text(README)
    pq.write_table(pa.Table.from_pylist(rows), root / "data" / "test-00000-of-00001.parquet")
    return root


def test_two_snapshots_named_main_are_not_read_as_each_other(tmp_path, monkeypatch):
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    a = _snapshot(tmp_path / "org__a" / "main", [{"q": "from a"}])
    b = _snapshot(tmp_path / "org__b" / "main", [{"q": "from b"}, {"q": "b again"}])
    task = TaskConfig("t", tmp_path / "t.yaml", "pack", "", {"task": "t", "test_split": "test"})
    assert list(default_loader(a, task)["q"]) == ["from a"]
    assert list(default_loader(b, task)["q"]) == ["from b", "b again"]
