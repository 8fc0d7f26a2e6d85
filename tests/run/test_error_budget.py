"""The error budget lives in the run (avhb/run/budget.py, applied by
``Evaluator.run``): ``avhb.evaluate`` over its budget raises ``OverBudget``
with the results it wrote, as ``avhb run`` exits 1 with the same line
(it used to return the results without a word); within the budget both
return them; a bad budget is refused before the run folder is made; the
merge's check is the same function."""
from __future__ import annotations

import json

import pytest

import avhb
from avhb.errors import RunStopped, UserError
from avhb.model.backend import parse_backend_spec
from avhb.run.budget import OverBudget, over_budget
from tests.conftest import run_cli

LINE = "1 of 6 samples failed (16.7% > --max-errors 5%)"  # the echo backend fails "question 2" of qa_easy's 6


def _options(out, **over):
    return avhb.RunOptions(tasks=["testpack/qa_easy"], model=parse_backend_spec("testpack/echo,fail_on=question 2"),
                           output_dir=out, sample_data=True, write_report=False, **over)


def test_the_python_api_holds_a_run_to_its_budget_as_the_cli_does(testpack, tmp_path):
    with pytest.raises(OverBudget) as raised:
        avhb.evaluate(_options(tmp_path / "api"))
    assert isinstance(raised.value, RunStopped) and str(raised.value).startswith(LINE)
    written = json.loads((tmp_path / "api" / "results.json").read_text())
    assert raised.value.results == written and written["results"]["testpack/qa_easy"]["errors"] == 1
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo,fail_on=question 2", "--sample-data",
                   "--no-report", "--output-dir", str(tmp_path / "cli"))
    assert proc.returncode == 1 and f"avhb: error: {LINE}" in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "cli" / "results.json").read_text())["results"] == written["results"]
    assert "run folder: " in proc.stderr  # the results are printed and the folder named before the error
    # within the budget: the results, from both
    results = avhb.evaluate(_options(tmp_path / "api2", max_errors="20%"))
    assert results["results"]["testpack/qa_easy"]["errors"] == 1


def test_a_bad_budget_is_refused_before_the_folder_is_made(testpack, tmp_path):
    with pytest.raises(UserError, match="--max-errors 'lots': give a share"):
        avhb.evaluate(_options(tmp_path / "run", max_errors="lots"))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("samples, errors, flag, over", [
    (6, 1, "5%", True), (6, 1, "0.2", False), (20, 1, "5%", False), (20, 2, "5%", True), (6, 0, "0", False),
    (6, 1, "0", True), (6, 6, "100%", False), (0, 0, "0", False),
])
def test_the_budget_is_the_share_of_failed_samples_over_every_task(samples, errors, flag, over):
    half = samples // 2
    results = {"results": {"a": {"samples": half, "errors": errors // 2},
                           "b": {"samples": samples - half, "errors": errors - errors // 2}, "note": "x"}}
    line = over_budget(results, flag)
    assert (line is not None) == over
    if over:
        assert line.startswith(f"{errors} of {samples} samples failed ({100 * errors / samples:.1f}% > --max-errors "
                               f"{flag})")


def test_the_line_names_each_judge_that_did_not_answer():
    results = {"results": {"t": {"samples": 2, "errors": 2}},
               "judge_errors": {"openai:j": {"failed": 1, "last_error": "HTTP 500:\n  boom"},
                                "openai:k": {"failed": 2, "last_error": None}}}
    line = over_budget(results, "5%")
    assert "; judge openai:j did not answer 1 question (last: HTTP 500: boom)" in line
    assert "; judge openai:k did not answer 2 questions (last: )" in line
    assert line.endswith("re-running the command retries them")


def test_a_row_without_samples_counts_none_and_a_judges_error_is_cut_at_300():
    results = {"results": {"a": {"samples": 4, "errors": 1}, "group": {"errors": 0}},
               "judge_errors": {"j": {"failed": 3, "last_error": "x" * 400}}}
    line = over_budget(results, "24%")  # 1 of 4, not of 5
    assert line.startswith("1 of 4 samples failed (25.0% > --max-errors 24%)")
    assert f"(last: {'x' * 300})" in line


def test_the_line_ends_with_the_most_common_error_and_its_count():
    from collections import Counter

    results = {"results": {"t": {"samples": 8, "errors": 8}}}
    causes = Counter({"doc_to_text: 'x' is undefined": 2, "HTTP 500: boom": 6})
    line = over_budget(results, "5%", causes)
    assert line.startswith("8 of 8 samples failed (100.0% > --max-errors 5%)")
    assert line.endswith("re-running the command retries them; most common error (6 of them): HTTP 500: boom")
    assert over_budget(results, "5%", Counter()).endswith("re-running the command retries them")


def test_a_samples_own_id_is_not_part_of_its_cause():
    from avhb.run.budget import error_cause

    assert error_cause("sample s7: doc_to_text index 3 is\n  out of range", "s7") == \
        "doc_to_text index 3 is out of range"
    assert error_cause("scoring: sample 's7': target not among the choices", "s7") == \
        "scoring: target not among the choices"
    assert error_cause("sample s8: x", "s7") == "sample s8: x"  # another sample's id is part of the message
    assert error_cause("y" * 400, "s7") == "y" * 300


def test_a_run_whose_every_sample_failed_says_the_common_cause_last(tmp_path):
    """Five samples fail: two at the model with errors of their own (their
    prompts differ), three with one shared error; the run's last line names
    the shared one and its count (not the first sample's)."""
    folder = tmp_path / "tk"
    folder.mkdir()
    rows = [{"question": "q1", "b": "x"}, {"question": "q2", "b": "x"}, {"b": "x"}, {"b": "y"}, {"b": "z"}]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "tk.yaml").write_text(f"task: tk\ndataset_path: json\ndataset_kwargs: {{data_files: {folder}/test.jsonl}}\n"
                                    "test_split: train\ndoc_to_text: \"{{question}}\"\ndoc_to_target: \"{{b}}\"\n"
                                    "metric_list: [{metric: exact_match}]\n")
    replies = tmp_path / "replies.json"
    replies.write_text("{}")
    proc = run_cli("--tasks", "tk/tk", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies}", "--no_report", "--output_path", str(tmp_path / "out"),
                   env={"AVHB_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1, proc.stderr
    cause = f"scripted backend: no reply in {replies} matches the request (key='', prompt starts '')"
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("avhb: error: 5 of 5 samples failed (100.0% > --max-errors 5%)"), last
    assert last.endswith(f"; most common error (3 of them): {cause}"), last
    assert f"5 of 5 samples failed and are excluded from its metrics (most common error, 3 of them: {cause}; " \
           "first: sample '0')" in proc.stderr
