"""benchmarks/letter_replies.py: its counts on a hand-written file in
MathVista's output layout (problems written for this test), and a file it
cannot read (one line, exit 2)."""
from __future__ import annotations

import json

from benchmarks.letter_replies import main

PROBLEMS = {
    "1": {"question_type": "multi_choice", "choices": ["3", "4", "5", "6"], "extraction": "C", "answer": "5"},
    "2": {"question_type": "multi_choice", "choices": ["3", "4", "5", "6"], "extraction": "(B) 4", "answer": "5"},
    # the text beside D is not D's: refused; the letter alone (D = 6) is the answer
    "3": {"question_type": "multi_choice", "choices": ["3", "4", "5", "6"], "extraction": "(D) 2\u221a7", "answer": "6"},
    "4": {"question_type": "multi_choice", "choices": ["up", "down"], "extraction": "E", "answer": "up"},  # no option E
    "5": {"question_type": "multi_choice", "choices": ["up", "down"], "extraction": "Down", "answer": "down"},
    "6": {"question_type": "multi_choice", "choices": ["(0, 2)", "(-2, 0)"], "extraction": "(2, 0)", "answer": "(0, 2)"},
    "7": {"question_type": "free_form", "choices": None, "extraction": "B", "answer": "12"},
}


def _rows(out: str, first_cell: str) -> list[list[str]]:
    """The cells of the rows that start with ``first_cell`` (the letter table's, then the text table's)."""
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in out.splitlines() if line.startswith(f"| {first_cell} |")]


def test_counts_of_a_small_output_file(tmp_path, capsys):
    path = tmp_path / "model" / "output_model.json"
    path.parent.mkdir()
    path.write_text(json.dumps(PROBLEMS))
    assert main([str(path), "--show-text"]) == 0
    out = capsys.readouterr().out
    letters, texts = _rows(out, "model/output_model.json")
    # replies, with text, read alone, read bare, read agreeing, refused, alone right / wrong, read differently
    assert letters[1:] == ["4", "2", "3", "1", "1", "1", "1 / 0", "0"]
    assert "pid 3: '(D) 2\u221a7'" in out and "letter alone D (right)" in out
    assert texts[1:] == ["2", "0", "1", "0", "1"]  # Down is read as B without equalling a choice; (2, 0) is no option
    assert "pid 5: 'Down' -> B" in out and "pid 6" not in out


def test_a_file_that_is_not_mathvista_output_is_one_line(tmp_path, capsys):
    bad = tmp_path / "output.json"
    bad.write_text(json.dumps({"1": {"question": "no type"}}))
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "problem 1 has no question_type" in err
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad.write_text("{")
    assert main([str(bad)]) == 2
    assert "is not JSON" in capsys.readouterr().err
