"""lmms-eval's ``reasoning_tags`` and ``auto_strip_thinking`` as its
evaluator applies them (lmms-eval 0.7.3: ``_process_document_results``
strips every filter pipeline's result with ``strip_reasoning_tags``; the
``auto_strip_thinking`` loop puts a ``StripThinkingFilter`` first in every
pipeline unless reasoning tags are in effect; its command line's default
tags are ``[["<think>", "</think>"], ["<analysis>", "</analysis>"]]``).
Each expected answer is what lmms-eval's own functions return for it
(checked in .venv-lmms: ``strip_reasoning_tags``, ``parse_reasoning_tags_config``,
``StripThinkingFilter``)."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from avhb.errors import UserError
from avhb.registry import get_registry
from avhb.run.score_phase import score
from avhb.run.task import Task
from avhb.score.metric import SampleRecord
from avhb.taskdef.config import TaskConfig, resolve_file
from avhb.taskdef.yaml_file import ConfigErrors

LMMS = {"lmms_eval_specific_kwargs": {"default": {}}}  # a key only lmms-eval has: its conventions apply
PIPELINE = [{"name": "first", "filter": [{"function": "take_first"}]}]


def _task(tmp_path: Path, **config) -> Task:
    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "bench",
                     {"task": "t", "doc_to_text": "{{q}}", "doc_to_target": "{{a}}", **config})
    return Task(cfg, get_registry())


def _extracted(task: Task, *responses: str) -> list:
    records = [SampleRecord(id=str(i), doc={"q": "?", "a": "A"}, response=r) for i, r in enumerate(responses)]
    asyncio.run(score(task, records, [], None))
    assert all(r.error is None for r in records), [r.error for r in records]
    return [r.extracted for r in records]


def test_reasoning_tags_strip_the_answer_before_metrics(tmp_path):
    task = _task(tmp_path, reasoning_tags=[["<think>", "</think>"]])
    assert _extracted(task, "<think>a\nb</think> B ", "no tags ") == ["B", "no tags"]


def test_reasoning_tags_strip_after_the_filters(tmp_path):
    # lowercase runs first, so the upper-case block is stripped after it (before it, it would stay)
    pipeline = [{"name": "low", "filter": [{"function": "lowercase"}, {"function": "take_first"}]}]
    task = _task(tmp_path, reasoning_tags=[["<think>", "</think>"]], filter_list=pipeline)
    assert _extracted(task, "<THINK>x</THINK> A") == [{"low": "a"}]
    chain = _task(tmp_path, reasoning_tags=[["<think>", "</think>"]], filter_list=[{"filter": "lowercase"}])
    assert _extracted(chain, "<THINK>x</THINK> A") == ["a"]


def test_reasoning_tags_as_a_json_string_and_an_empty_list(tmp_path):
    assert _extracted(_task(tmp_path, reasoning_tags='[["<r>", "</r>"]]'), "  E <r>1</r> ") == ["E"]
    # no pairs: lmms-eval's strip_reasoning_tags only strips white space
    assert _extracted(_task(tmp_path, reasoning_tags=[]), "  <think>x</think> F ") == ["<think>x</think> F"]


def test_lmms_eval_tasks_get_its_command_lines_default_tags(tmp_path):
    task = _task(tmp_path, **LMMS)
    assert _extracted(task, "<analysis>why</analysis>C <think>t</think>", "plan</think> D") == ["C", "D"]
    # a task of avhb's own strips nothing unless it asks
    assert _extracted(_task(tmp_path), "<analysis>why</analysis>C") == ["<analysis>why</analysis>C"]


def test_reasoning_tags_none_or_false_strips_nothing(tmp_path):
    for off in ("none", False):
        assert _extracted(_task(tmp_path, reasoning_tags=off, **LMMS), " <think>t</think>C ") == [" <think>t</think>C "]


def test_auto_strip_thinking_runs_before_the_filters(tmp_path):
    pipeline = [{"name": "num", "filter": [{"function": "regex", "regex_pattern": r"(\d)"},
                                           {"function": "take_first"}]}]
    task = _task(tmp_path, auto_strip_thinking=True, filter_list=pipeline)
    assert _extracted(task, "<think>1</think> #### 2", "<thinking>z</thinking>3") == [{"num": "2"}, {"num": "3"}]
    assert _extracted(_task(tmp_path, filter_list=pipeline), "<think>1</think> #### 2") == [{"num": "1"}]


def test_auto_strip_thinking_yields_to_reasoning_tags_in_effect(tmp_path):
    pipeline = [{"name": "num", "filter": [{"function": "regex", "regex_pattern": r"(\d)"},
                                           {"function": "take_first"}]}]
    # lmms-eval's default tags are in effect: no stripping before the regex, which finds the 1
    assert _extracted(_task(tmp_path, auto_strip_thinking=True, filter_list=pipeline, **LMMS),
                      "<think>1</think> #### 2") == [{"num": "1"}]
    # reasoning_tags: none turns them off, and auto_strip_thinking then strips first
    assert _extracted(_task(tmp_path, auto_strip_thinking=True, reasoning_tags="none", filter_list=pipeline, **LMMS),
                      "<think>1</think> #### 2") == [{"num": "2"}]


def test_a_bad_reasoning_tags_value_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"reasoning_tags: '\[\[' is neither 'none' nor a JSON list"):
        _task(tmp_path, reasoning_tags="[[", filter_list=PIPELINE).filter_pipelines()
    file = tmp_path / "bad.yaml"
    file.write_text('task: bad\ndoc_to_text: "{{q}}"\nreasoning_tags: [["<think>"]]\n')
    with pytest.raises(ConfigErrors) as err:
        resolve_file(file, tmp_path, "pack", "")
    assert "reasoning_tags" in str(err.value) and "not a list of [open, close] tag pairs" in str(err.value)
