"""What ``avhb merge`` reports besides the numbers (issue 27):

* error accounting and exit status: a merged run is held to the error
  budget its shards ran under (``run.json: max_errors``) over the merged
  counts, and exits as the unsharded run does (1 with the same line when
  over it), whatever each shard's own exit was;
* judge calls repeated across shards: counted (``judge_usage.duplicated_calls``,
  a note) against the calls an unsharded run makes, counted by the judge
  backend itself;
* data changed after the shards ran: named (the task, the data, the first
  sample and field), never "resume it with its original command"; a
  shard's incomplete journal names that shard instead.
"""
from __future__ import annotations

import json
from pathlib import Path

from avhb.cli import main
from avhb.run.usage import without_timings

N = 3


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


def _shards(capsys, flags: list[str], tmp_path: Path, n: int = N, extra=lambda i: []) -> tuple[list[Path], list[int]]:
    folders, codes = [], []
    for i in range(n):
        out = tmp_path / f"shard-{i}"
        code, _ = _run(capsys, *flags, *extra(i), "--shard", f"{i}/{n}", "--output-dir", str(out))
        folders.append(out)
        codes.append(code)
    return folders, codes


def _results(folder: Path) -> dict:
    """results.json without the measured latencies (they are this machine's, not the run's)."""
    return without_timings(json.loads((folder / "results.json").read_text()))


def test_merge_exits_as_the_unsharded_run_over_the_shards_error_budget(tmp_path, testpack, capsys):
    data = _rows(tmp_path / "easy.jsonl", [{"id": f"r{i:02d}", "q": f"question {i}" + (" FAIL" if i in (2, 9) else ""),
                                           "a": f"ans{i}", "kind": "xy"[i % 2]} for i in range(12)])
    flags = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo,fail_on=FAIL", "--sample-data", "--data",
             f"testpack/qa_easy={data}", "--no-report", "--max-errors", "10%"]
    code, err = _run(capsys, *flags, "--output-dir", str(tmp_path / "full"))
    budget_line = "avhb: error: 2 of 12 samples failed (16.7% > --max-errors 10%)"
    assert code == 1 and budget_line in err
    shards, codes = _shards(capsys, flags, tmp_path)
    # the shards' own exits depend on how the failures fell: at least one was under its budget
    per_shard = [(_results(s)["results"]["testpack/qa_easy"]["errors"], _results(s)["results"]["testpack/qa_easy"]["samples"])
                 for s in shards]
    assert sum(e for e, _ in per_shard) == 2 and 0 in codes
    assert codes == [1 if n and e / n > 0.1 else 0 for e, n in per_shard]

    merged = tmp_path / "merged"
    code, err = _run(capsys, "merge", str(merged), *map(str, shards), "--no-report")
    assert code == 1 and budget_line in err, err
    assert _results(merged) == _results(tmp_path / "full")  # errors per task, breakdown and all
    assert json.loads((merged / "run.json").read_text())["max_errors"] == "10%"
    # the budget can be given to the merge; within it, exit 0
    code, err = _run(capsys, "merge", str(merged), *map(str, shards), "--no-report", "--max-errors", "20%")
    assert code == 0, err

    # shards run under different budgets: the merge picks none of them
    other = tmp_path / "shard-2-other"
    code, _ = _run(capsys, *flags[:-1], "50%", "--shard", f"2/{N}", "--output-dir", str(other))
    code, err = _run(capsys, "merge", str(tmp_path / "m2"), str(shards[0]), str(shards[1]), str(other), "--no-report")
    assert code == 2
    assert ("the shards ran under different --max-errors (10% (shard 0/3), 50% (shard 2/3)): give the merge one"
            in err), err
    code, err = _run(capsys, "merge", str(tmp_path / "m2"), str(shards[0]), str(shards[1]), str(other), "--no-report",
                     "--max-errors", "0")
    assert code == 1 and "2 of 12 samples failed (16.7% > --max-errors 0)" in err


def test_judge_calls_repeated_across_shards_are_counted(tmp_path, testpack, capsys):
    # 30 samples asking 10 distinct questions (same question, same answer): 10 distinct judge requests
    data = _rows(tmp_path / "judged.jsonl", [{"id": f"j{i:02d}", "q": f"question {i % 10}", "a": f"ans{i % 10}",
                                              "kind": "xy"[i % 2]} for i in range(30)])
    calls = tmp_path / "judge-calls.txt"
    flags = ["--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--data",
             f"testpack/qa_judged={data}", "--judge", f"scorer=testpack/keyword,calls={calls}", "--no-report"]
    code, _ = _run(capsys, *flags, "--output-dir", str(tmp_path / "full"))
    assert code == 0
    unsharded = len(calls.read_text().splitlines())
    assert unsharded == 10  # asked once per run
    calls.unlink()
    shards, codes = _shards(capsys, flags, tmp_path)
    assert codes == [0] * N
    made = len(calls.read_text().splitlines())
    assert made > unsharded  # shards share no journal: a question two shards ask is asked twice

    merged = tmp_path / "merged"
    code, err = _run(capsys, "merge", str(merged), *map(str, shards), "--no-report")
    assert code == 0, err
    repeated = made - unsharded
    note = (f"judges: {repeated} of the {made} judge calls the shards made repeat a request another shard made too "
            f"(an unsharded run asks each of the 10 distinct requests once)")
    assert note in err
    usage = _results(merged)["judge_usage"]
    assert usage["calls"] == made and usage["duplicated_calls"] == repeated and usage["duplicated_cost"] == 0
    assert any(n.startswith(note) for n in json.loads((merged / "run.json").read_text())["notes"])
    # every number but the usage is the unsharded run's
    full = _results(tmp_path / "full")
    assert {k: v for k, v in _results(merged).items() if k != "judge_usage"} == \
           {k: v for k, v in full.items() if k != "judge_usage"}
    assert full["judge_usage"]["calls"] == unsharded


def test_a_stale_data_merge_names_the_changed_data(tmp_path, testpack, capsys):
    rows = [{"id": f"r{i:02d}", "q": f"question {i}", "a": f"ans{i}", "kind": "xy"[i % 2], "know": i != 5}
            for i in range(10)]
    data = _rows(tmp_path / "easy.jsonl", rows)
    flags = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--data",
             f"testpack/qa_easy={data}", "--no-report"]
    shards, codes = _shards(capsys, flags, tmp_path, n=2)
    assert codes == [0, 0]
    merged = tmp_path / "merged"

    def refused(data_changed: bool = True) -> str:
        code, err = _run(capsys, "merge", str(merged), *map(str, shards), "--no-report")
        assert code == 2 and not (merged / "results.json").exists() and not (merged / "samples").exists()
        errors = [line for line in err.splitlines() if line.startswith("avhb: error: ")]
        assert len(errors) == 1 and ("resume it with its original command" in err) != data_changed, err
        return errors[0]

    # a question edited: its prompt changes, its answer is not in any journal
    _rows(data, [dict(r, q="edited") if r["id"] == "r03" else r for r in rows])
    assert (f"avhb: error: task 'testpack/qa_easy': its data ({data}) changed after the shards ran: 1 samples differ "
            "from what the shards ran (first: sample 'r03', fields 'prompt', 'q'); the merge replays the shards' "
            "answers and scores them against the data they were given: restore that data, or run the shards again"
            in refused())
    # a target edited where the prompt does not show it: every answer replays, the scores would silently change
    _rows(data, [dict(r, a="other") if r["id"] == "r05" else r for r in rows])
    assert "1 samples differ from what the shards ran (first: sample 'r05', field 'a')" in refused()
    # a sample added, one removed
    _rows(data, [*rows[1:], {"id": "r99", "q": "new", "a": "x", "kind": "x"}])
    err = refused()
    assert "1 samples are new (first: 'r99'); 1 samples the shards ran are gone (first: 'r00')" in err
    # the data as the shards ran it: the merge goes through
    _rows(data, rows)
    code, err = _run(capsys, "merge", str(merged), *map(str, shards), "--no-report")
    assert code == 0, err
    # a shard whose journal lost an answer (the data unchanged): that shard is named
    journal = shards[1] / "journal" / "responses.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[1:]))
    err = refused(data_changed=False)
    assert (f"task 'testpack/qa_easy': 1 responses are in no shard's journal though its data is as the shards ran "
            f"it (first: shard 1/2, {shards[1]}): that shard's journal is incomplete") in err
