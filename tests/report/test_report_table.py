"""Plain-text results table and the reader of results.json's flat form."""
from avhb.report.numbers import fmt_cell, fmt_number
from avhb.report.table import format_results_table
from avhb.runfolder.results import cells_of
from avhb.score.aggregate import Aggregate as Cell


def test_metric_names_skip_companions_and_bookkeeping():
    m = {"acc": 0.5, "acc_stderr": 0.1, "acc_n": 10, "samples": 12, "errors": 2, "judge_failures": 0,
         "yes_diff": -0.25, "yes_diff_stderr": None, "yes_diff_n": 8, "lonely_n": 3, "note": "text"}
    # lonely_n has no "lonely" key, so it is a metric; strings are not metrics
    cells = cells_of(m)
    assert list(cells) == ["acc", "yes_diff", "lonely_n"]
    assert cells["acc"] == Cell(0.5, 0.1, 10)
    assert cells["yes_diff"] == Cell(-0.25, None, 8)
    assert cells_of({"x": None})["x"] == Cell(None, None, None)
    assert cells_of({}) == {}


def test_number_formatting():
    assert fmt_number(None) == "-"
    assert fmt_number(0.123456) == "0.1235"
    assert fmt_number(-0.5) == "-0.5000"
    assert fmt_number(123456.0) == "123456"
    assert fmt_number(12345.67) == "12345.7"
    assert fmt_cell(Cell(0.5, 0.01234, 3)) == "0.5000 ± 0.0123"
    assert fmt_cell(Cell(0.5, None, 3)) == "0.5000"
    assert fmt_cell(Cell(None, 0.1, 3)) == "-"


def test_table_rows_groups_and_notes():
    doc = {
        "results": {
            "curve_ta_IN": {"accuracy": 0.625, "accuracy_stderr": 0.239357, "accuracy_n": 4,
                            "samples": 5, "errors": 1, "judge_failures": 2},
            "vidpair_binary": {"vAcc": 0.4, "vAcc_stderr": None, "vAcc_n": 500, "qAcc": None,
                               "qAcc_stderr": None, "qAcc_n": 0, "samples": 6, "errors": 0, "judge_failures": 0},
            "empty": {"samples": 0, "errors": 0, "judge_failures": 0},
        },
        "groups": {"curve": {"accuracy": 0.7, "accuracy_stderr": 0.05, "accuracy_n": 11}},
    }
    lines = format_results_table(doc).splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == [
        "Task", "Metric", "Value", "", "Stderr", "N", "Samples", "Errors", "Judge fail.", "Unparsed"]
    body = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines[2:6]]
    assert body == [
        ["curve_ta_IN *", "accuracy", "0.6250", "±", "0.2394", "4", "5", "1", "2", ""],
        ["vidpair_binary", "vAcc", "0.4000", "", "", "500", "6", "0", "0", ""],
        ["", "qAcc", "-", "", "", "0", "", "", "", ""],
        ["empty", "-", "-", "", "", "", "0", "0", "0", ""],
    ]
    assert lines[6] == ""
    assert [c.strip() for c in lines[9].split("|")[1:-1]] == ["curve", "accuracy", "0.7000", "±", "0.0500", "11"]
    assert any(line.startswith("- * some samples failed outside the model") and "excluded" in line for line in lines)
    # every table line of one block has the same width
    assert len({len(ln) for ln in lines[:6]}) == 1


def test_headline_first_counts_as_integer_columns_and_descriptions():
    def cells(v, se, n):
        return {"": v, "_stderr": se, "_n": n}

    res = {}
    for name, (v, se, n) in {"yes_ratio": (0.6, 0.02, 40), "choice_accuracy": (0.55, 0.03, 40),
                             "choice_accuracy_unparsed": (3.0, None, 40),
                             "choice_accuracy_judge_failures": (1.0, None, 40), "skipped": (2.0, None, 40)}.items():
        res.update({name + k: x for k, x in cells(v, se, n).items()})
    res.update(samples=41, errors=1, judge_failures=1)
    doc = {"results": {"mcq": res}, "metrics": {"mcq": {
        "yes_ratio": {"kind": "diagnostic", "higher_is_better": None, "description": "share of yes"},
        "choice_accuracy": {"kind": "headline", "higher_is_better": True, "description": "right options"},
        "choice_accuracy_unparsed": {"kind": "count", "higher_is_better": False, "description": "unparsed"},
        "choice_accuracy_judge_failures": {"kind": "count", "higher_is_better": False, "description": "x"},
        "skipped": {"kind": "count", "higher_is_better": False, "description": "skipped"}}}}
    lines = format_results_table(doc, notes=["mcq: video not sent to local"]).splitlines()
    body = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines[2:4]]
    assert body == [
        ["mcq *", "choice_accuracy", "0.5500", "±", "0.0300", "40", "41", "1", "1", "3",
         "skipped 2, judge_failures 1"],  # * : the task has errors (one sample failed outside the model)
        ["", "yes_ratio (diag)", "0.6000", "±", "0.0200", "40", "", "", "", "", ""],
    ]
    assert "choice_accuracy: right options (higher is better)" in lines
    assert "yes_ratio: share of yes" in lines
    assert lines[-3:-1] == ["Notes:", "- mcq: video not sent to local"]
    assert lines[-1].startswith("- * some samples failed outside the model") and "counted in Errors" in lines[-1]


def test_table_accepts_bare_task_mapping():
    text = format_results_table({"t": {"acc": 1.0, "acc_stderr": 0.0, "acc_n": 2}})
    assert "| t    | acc    | 1.0000 | ± | 0.0000 | 2 |" in text
    assert format_results_table({"results": {}}) == "(no task results)"


def test_a_description_says_how_its_interval_was_made():
    """The printed description ends with the 95 % interval's method, as the
    metric's results.json entry records it; no interval, no method."""
    res = {"acc": 0.5, "acc_stderr": 0.1, "acc_n": 20, "acc_ci": [0.3, 0.7],
           "bias": 0.2, "bias_stderr": 0.05, "bias_n": 20, "bias_ci": [0.1, 0.3],
           "share": 0.4, "share_stderr": 0.1, "share_n": 20}
    doc = {"results": {"t": res}, "metrics": {"t": {
        "acc": {"kind": "headline", "higher_is_better": True, "description": "right", "interval": "wilson"},
        "bias": {"kind": "diagnostic", "higher_is_better": None, "description": "lean", "interval": "normal"},
        "share": {"kind": "diagnostic", "higher_is_better": None, "description": "part"}}}}
    lines = format_results_table(doc).splitlines()
    assert "acc: right (higher is better; 95 % CI: Wilson)" in lines
    assert "bias: lean (95 % CI: ± 1.96 se)" in lines
    assert "share: part" in lines
