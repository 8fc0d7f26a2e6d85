"""scripts/peer_task_survey.py's reason_of: the survey groups refusals by
the reason an error line names, its FILE:LINE prefix and values cut."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from peer_task_survey import reason_of  # noqa: E402


@pytest.mark.parametrize("line", [
    "/v/lm_eval/tasks/mmlu/default/mmlu_a.yaml:12: include: no file 'x.yaml'",
    "avhb: error: /v/lm_eval/tasks/mmlu/default/mmlu_b.yml:3: include: no file \"y.yaml\"",
    "/v/lm_eval/tasks/eus_exams/eus_exams:4: include: no file 'z'",  # an include base without an extension
    "/v/lmms_eval/tasks/my tasks/t.yaml:7: include: no file 'w'",  # a folder with a space
    "mmlu_c_yaml:9: include: no file 'v'",
])
def test_the_file_and_line_are_cut_whatever_the_file_is_named(line):
    assert reason_of(line) == "include: no file '…'"


def test_a_line_without_a_file_keeps_its_text_and_numbers_become_n():
    assert reason_of("output_type: unsupported: 'x' (and 3 more; see `avhb validate FILE`)") == \
        "output_type: unsupported: '…'"
    assert reason_of("  metric: expected at most 2 options, got 5  ") == "metric: expected at most N options, got N"
