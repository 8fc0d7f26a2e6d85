"""``include:`` given as a list (lm-eval's darija_bench does): every base
in order, a later base's keys over an earlier one's, the file's own keys
over all, as lm-eval 0.4.13's ``load_yaml`` merges them; a base's own
``include`` resolved first; a missing base or a non-name entry is one line,
never a traceback."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from avhb.taskdef.config import resolve_file
from avhb.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _bases(folder: Path) -> None:
    write(folder, "_first_yaml", """
        include: _root_yaml
        dataset_path: org/first
        dataset_name: from_first
        test_split: test
        num_fewshot: 1
        doc_to_text: "first {{q}}"
        """)
    write(folder, "_root_yaml", """
        dataset_name: from_root
        target_delimiter: "|"
        description: root
        """)
    write(folder, "common/_second_yaml", """
        dataset_name: from_second
        doc_to_text: "second {{q}}"
        process_docs: !function utils.keep
        """)
    write(folder, "common/utils.py", "def keep(docs):\n    return docs\n")


def test_a_list_of_bases_merges_in_order_under_the_files_own_keys(tmp_path):
    _bases(tmp_path)
    child = write(tmp_path, "t.yaml", """
        include:
          - _first_yaml
          - common/_second_yaml
        task: t
        doc_to_target: own
        description: own
        """)
    (task,), _ = resolve_file(child, tmp_path, "pack", "")
    config = task.config
    assert config["dataset_path"] == "org/first"  # only the first base sets it
    assert config["dataset_name"] == "from_second"  # the later base wins over the first (and the first's base)
    assert config["doc_to_text"] == "second {{q}}"
    assert config["target_delimiter"] == "|" and config["num_fewshot"] == 1  # the first base's own base
    assert config["description"] == "own" and config["doc_to_target"] == "own"  # the file's keys win
    assert config["process_docs"] == {"function": "common/utils.keep"}  # a base's hook, relative to the base
    assert "include" not in config


def test_the_order_of_the_list_decides(tmp_path):
    _bases(tmp_path)
    child = write(tmp_path, "t.yaml", """
        include: [common/_second_yaml, _first_yaml]
        task: t
        doc_to_target: a
        """)
    (task,), _ = resolve_file(child, tmp_path, "pack", "")
    assert task.config["dataset_name"] == "from_first" and task.config["doc_to_text"] == "first {{q}}"


@pytest.mark.parametrize("entries, said", [
    ("[_first_yaml, _missing_yaml]", "include: included file '_missing_yaml' not found next to t.yaml"),
    ("[_first_yaml, 3]", "include"),
])
def test_a_bad_entry_is_one_line(tmp_path, entries, said):
    _bases(tmp_path)
    child = write(tmp_path, "t.yaml", f"include: {entries}\ntask: t\ndoc_to_target: a\n")
    with pytest.raises(UserError) as err:
        resolve_file(child, tmp_path, "pack", "")
    assert said in str(err.value) and "t.yaml:1" in str(err.value)
    proc = subprocess.run([sys.executable, "-m", "avhb.cli", "validate", str(child)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and said in proc.stdout, proc.stdout + proc.stderr
