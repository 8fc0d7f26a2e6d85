"""Issue 15, defects 1, 2 and 5: a broken task file, a hook that raises
and a duplicate are one line naming the file (and line, key or function)
at run time, not "unknown task" or a traceback."""
from __future__ import annotations

import importlib
import sys

import pytest

from avhb.cli import main
from tests.packs import QA_ROWS, jsonl, make_pack, task_yaml

HOOKS = '''
def add(docs):
    return [dict(d, extra=1) for d in docs]


def boom(docs):
    return [d["nope"] for d in docs]


def not_a_list(docs):
    return 42


def text(doc):
    if doc["id"] == "s1":
        raise ZeroDivisionError("division by zero in the prompt hook")
    return f"Q: {doc['q']} ANSWER: {doc['a']}"
'''


@pytest.fixture
def pack(tmp_path, monkeypatch):
    """make_pack(files) -> the pack folder, importable in this process."""
    from avhb import registry

    def make(files: dict[str, str]):
        root = tmp_path / "pack"
        make_pack(root, {"data/data.jsonl": jsonl(QA_ROWS), "hooks.py": HOOKS, **files})
        monkeypatch.syspath_prepend(str(root))
        from tests.conftest import TESTPACK

        monkeypatch.syspath_prepend(str(TESTPACK))
        for name in [m for m in sys.modules if m.startswith("bad_tasks")]:
            del sys.modules[name]
        registry.get_registry.cache_clear()
        importlib.invalidate_caches()
        return root / "bad_tasks"

    yield make
    registry.get_registry.cache_clear()


def _run(capsys, *args):
    rc = main(["--tasks", "bad/t", "--model", "testpack/echo", "--sample-data", "--no-report", *args])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("avhb: error")]
    return rc, err, errors


DATA = "sample_data: data\ndataset_kwargs:\n  data_files: data.jsonl\n"


@pytest.mark.parametrize("body, where", [
    # malformed YAML (a bad indent)
    (task_yaml("t") + DATA + "metadata:\n  version: 1\n   extra: 2\n", "t.yaml:12: YAML error"),
    (task_yaml("t") + DATA + "doc_to_txt: x\n", "t.yaml:10: doc_to_txt: unknown key 'doc_to_txt'"),
    (task_yaml("t") + DATA + "repeats: two\n", "t.yaml:10: repeats: expected integer"),
    ("include: _b.yaml\n" + task_yaml("t") + DATA, "include: cycle"),
    ("include: _nope.yaml\n" + task_yaml("t") + DATA, "include: included file '_nope.yaml' not found"),
    (task_yaml("t") + DATA + "process_docs: !function hooks.nope\n", "process_docs: hook function 'nope' not defined"),
    (task_yaml("t") + DATA + "process_docs: !function nohooks.add\n", "process_docs: hook module 'nohooks' not found"),
    (task_yaml("t") + DATA + "x: !!python/object/apply:os.system ['echo hi']\n", "t.yaml:10: YAML error"),
])
def test_run_names_the_broken_task_file(pack, capsys, tmp_path, body, where):
    pack({"t.yaml": body, "_b.yaml": "include: t.yaml\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1, err
    assert where in errors[0] and "bad_tasks" in errors[0], errors[0]
    assert "task 'bad/t' cannot be loaded" in errors[0]


def test_the_runs_load_error_lists_every_error_of_the_file(pack, capsys, tmp_path):
    pack({"t.yaml": task_yaml("t") + DATA + "doc_to_txt: x\nrepeats: two\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1, err
    assert errors[0].endswith("t.yaml:10: doc_to_txt: unknown key 'doc_to_txt'; line 11: repeats: expected integer, "
                              "got str 'two'"), errors[0]


def test_the_runs_load_error_lists_the_first_three_and_the_count(pack, capsys, tmp_path):
    pack({"t.yaml": task_yaml("t") + DATA + "doc_to_txt: x\nrepeats: two\nsumary: s\nrepeat: 1\nmetrics: []\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1, err
    path = tmp_path / "pack" / "bad_tasks" / "t.yaml"
    assert f"cannot be loaded: {path}:10: doc_to_txt: unknown key 'doc_to_txt'; line " in errors[0]
    assert errors[0].endswith(f"(and 2 more, 5 in all: `avhb validate {path}` lists them)"), errors[0]
    assert errors[0].count("; line ") == 2, errors[0]


def test_a_key_given_twice_keeps_the_last_value_with_one_note(pack, capsys, tmp_path):
    """PyYAML's rule, as lm-eval and lmms-eval read their files: the last value
    wins; the file gets one note naming every key given twice, with lines."""
    pack({"t.yaml": task_yaml("t") + DATA + "repeats: 1\nrepeats: 2\ntask: t2\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1, err
    assert "unknown task or group 'bad/t'" in errors[0]
    assert "t.yaml:11: note: keys given twice in one mapping: 'repeats' (lines 10 and 11), 'task' (lines 1 and 12)" \
        in errors[0], errors[0]


def test_a_task_defined_twice_is_refused_naming_both_files(pack, capsys, tmp_path):
    pack({"t.yaml": task_yaml("t") + DATA, "again.yaml": task_yaml("t") + DATA})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1
    assert "defined twice" in errors[0] and "again.yaml" in errors[0] and "t.yaml" in errors[0]


def test_empty_task_list_is_a_user_error(pack, capsys, tmp_path):
    pack({"t.yaml": task_yaml("t") + DATA})
    rc = main(["--tasks", ",", "--model", "testpack/echo", "--output-dir", str(tmp_path / "run")])
    assert rc == 2 and "--tasks names no task" in capsys.readouterr().err


def test_hook_module_that_raises_at_import_is_one_line(pack, capsys, tmp_path):
    pack({"t.yaml": task_yaml("t") + DATA + "process_docs: !function broken.add\n",
          "broken.py": "def add(docs):\n    return docs\n\nraise RuntimeError('the module is broken')\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1 and "Traceback" not in err
    assert "t.yaml: hook 'broken.add' cannot be loaded: RuntimeError: the module is broken" in errors[0]


@pytest.mark.parametrize("hook, message", [
    ("boom", "process_docs hook boom failed: KeyError: 'nope'"),
    ("not_a_list", "process_docs hook hooks.not_a_list: returned int, not a list of samples"),
])
def test_load_time_hook_failure_is_one_line(pack, capsys, tmp_path, hook, message):
    pack({"t.yaml": task_yaml("t") + DATA + f"process_docs: !function hooks.{hook}\n"})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1 and "Traceback" not in err
    assert "t.yaml" in errors[0] and message.replace("boom", "hooks.boom") in errors[0]


def test_per_sample_hook_failure_fails_that_sample_only(pack, capsys, tmp_path):
    import json

    body = task_yaml("t").replace('doc_to_text: "Q: {{q}} ANSWER: {{a}}"', "doc_to_text: !function hooks.text")
    pack({"t.yaml": body + DATA})
    out = tmp_path / "run"
    rc, err, errors = _run(capsys, "--output-dir", str(out), "--max-errors", "100%")
    assert rc == 0, err
    lines = {x["id"]: x for x in map(json.loads, (out / "samples" / "bad__t.jsonl").read_text().splitlines())}
    assert lines["s1"]["error"] == ("doc_to_text hook hooks.text failed: ZeroDivisionError: division by zero in the "
                                    "prompt hook")
    assert all(lines[s]["error"] is None and lines[s]["scores"]["exact"] == 1.0 for s in ("s0", "s2", "s3"))
    res = json.loads((out / "results.json").read_text())["results"]["bad/t"]
    assert res["errors"] == 1 and res["exact"] == 1.0 and res["exact_n"] == 3


@pytest.mark.parametrize("rows, message", [
    ([], "its data"),
    ([QA_ROWS[0], dict(QA_ROWS[1], id="s0")], "sample id 's0' appears twice"),
])
def test_empty_dataset_and_duplicate_sample_ids_are_errors(pack, capsys, tmp_path, rows, message):
    pack({"t.yaml": task_yaml("t") + DATA, "data/data.jsonl": jsonl(rows)})
    rc, err, errors = _run(capsys, "--output-dir", str(tmp_path / "run"))
    assert rc == 2 and len(errors) == 1 and message in errors[0], err
    if not rows:
        assert "has no samples" in errors[0]
    else:
        assert "samples 0 and 1" in errors[0] and "doc_id field 'id' must be unique" in errors[0]
