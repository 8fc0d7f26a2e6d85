"""The one-configuration rule's pieces (avhb/resume/setting_kinds.py), on run.json
documents written by hand: every difference :func:`compare` finds, its
kind and how it is said, the folder that may grow and the shards that may
not, and how values are shown (what ``previous/`` keeps:
tests/runfolder/test_previous.py).  The runs through
the CLI are in tests/resume/test_one_configuration.py."""
from __future__ import annotations

import json

import pytest

from avhb.resume.setting_kinds import (CALLS, CODE, HOW, SCORING, SELECTION, Changes, Difference, compare, how_settings,
                               identity_of, invocation, refusal, show, spec_text)


def _run(**over):
    run = {
        "model": {"identity": {"kind": "openai", "name": "gpt", "args": {"base_url": "http://h"}},
                  "executor": None, "runtime": {"concurrency": 4}},
        "gen_kwargs": {}, "media": {}, "ablations": [], "seed": 1234, "seeds": None, "repeats": None,
        "system_instruction": None,
        "tasks": {"a": {"hash": "h1", "config": {"task": "a", "prompt": "p"}, "data": {"kind": "local", "root": "/d"}}},
        "limit": None, "samples": None,
        "judge_panels": {"scorer": [{"kind": "openai", "name": "judge"}]},
        "predict_only": False, "plugins": {"avhb-testpack": "1.0"}, "batch_size": None, "command": "avhb run",
    }
    run.update(over)
    return run


def _said(changes: Changes) -> list[tuple[str, str]]:
    return [(d.kind, str(d)) for d in changes.items]


def test_the_same_run_has_no_differences():
    assert compare(_run(), _run()).items == []
    assert compare(_run(), json.loads(json.dumps(_run()))).items == []


@pytest.mark.parametrize("key, old, new, said", [
    ("gen_kwargs", {}, {"max_tokens": 8}, 'gen_kwargs {} -> {"max_tokens": 8}'),
    ("media", {}, {"fps": 2}, 'media {} -> {"fps": 2}'),
    ("ablations", [], ["no_audio"], 'ablations [] -> ["no_audio"]'),
    ("seed", 1234, 7, "seed 1234 -> 7"),
    ("seeds", None, [1, 2, 3, 4], "seeds none -> [1, 2, 3, 4]"),
    ("repeats", None, 3, "repeats none -> 3"),
    ("system_instruction", None, "Be brief.", "system_instruction none -> Be brief."),
])
def test_each_call_setting_is_a_calls_difference(key, old, new, said):
    assert _said(compare(_run(**{key: old}), _run(**{key: new}))) == [(CALLS, said)]


def test_a_fewshot_seed_equal_to_the_seed_is_the_default_in_either_record():
    # folders written before RunOptions recorded that case as None hold the number: resuming one is no change
    assert compare(_run(fewshot_seed=1234), _run(fewshot_seed=None)).items == []
    assert compare(_run(fewshot_seed=None), _run(fewshot_seed=1234)).items == []
    assert _said(compare(_run(fewshot_seed=None), _run(fewshot_seed=7))) == [(CALLS, "fewshot_seed none -> 7")]
    assert _said(compare(_run(fewshot_seed=1234), _run(fewshot_seed=7))) == [(CALLS, "fewshot_seed 1234 -> 7")]
    # a new seed moves the default draw too, said once (as the seed)
    assert _said(compare(_run(seed=1234, fewshot_seed=None), _run(seed=7, fewshot_seed=None))) == [
        (CALLS, "seed 1234 -> 7")]
    assert _said(compare(_run(seed=1234, fewshot_seed=1234), _run(seed=7, fewshot_seed=1234))) == [
        (CALLS, "seed 1234 -> 7")]  # the same draw: only the seed moved
    assert _said(compare(_run(seed=1234, fewshot_seed=1234), _run(seed=7, fewshot_seed=None))) == [
        (CALLS, "seed 1234 -> 7")]  # an older folder's default and the new default: the seed says it
    assert _said(compare(_run(seed=1234, fewshot_seed=None), _run(seed=7, fewshot_seed=1234))) == [
        (CALLS, "seed 1234 -> 7")]  # the examples are drawn with 1234 before and after
    assert _said(compare(_run(seed=1234, fewshot_seed=5), _run(seed=7, fewshot_seed=None))) == [
        (CALLS, "seed 1234 -> 7"), (CALLS, "fewshot_seed 5 -> none")]


def test_the_model_by_identity_older_run_json_included():
    other = _run(model={**_run()["model"], "identity": {"kind": "openai", "name": "gpt-2", "args": {"base_url": "http://h"}}})
    assert _said(compare(_run(), other)) == [
        (CALLS, "model openai:gpt,base_url=http://h -> openai:gpt-2,base_url=http://h")]
    older = _run(model={"kind": "openai", "name": "gpt", "args": {"base_url": "http://h"}})  # no "identity"
    assert compare(older, _run(model={"identity": older["model"]})).of(CALLS) == []
    assert _said(compare(older, _run(model={"identity": {**older["model"], "name": "o3"}}))) == [
        (CALLS, "model openai:gpt,base_url=http://h -> openai:o3,base_url=http://h")]
    assert compare(_run(model=None), _run()).of(CALLS) == []  # nothing recorded: nothing to compare
    assert compare(_run(), _run(model={})).of(CALLS) == []


def test_a_task_config_difference_names_each_key_and_the_data_its_source():
    new = _run(tasks={"a": {"hash": "h2", "config": {"task": "a", "prompt": "q", "extra": 1},
                            "data": {"kind": "hub", "root": "org/ds", "revision": "abc"}}})
    assert _said(compare(_run(), new)) == [
        (CALLS, "task a extra none -> 1"), (CALLS, "task a prompt p -> q"),
        (CALLS, "task a data local:/d -> hub:org/ds@abc")]
    d = compare(_run(), new).items[0]
    assert (d.key, d.old, d.new) == ("tasks.a.config.extra", "none", "1")
    # another hash, the same config (an older run.json without the config): the hash is said
    hashed = _run(tasks={"a": {"hash": "h2", "config": {"task": "a", "prompt": "p"}, "data": {"kind": "local", "root": "/d"}}})
    assert _said(compare(_run(), hashed)) == [(CALLS, "task a config h1 -> h2")]
    no_config = _run(tasks={"a": {"hash": "h2", "data": {"kind": "local", "root": "/d"}}})
    assert _said(compare(_run(), no_config)) == [(CALLS, "task a config h1 -> h2")]
    assert compare(_run(), _run(tasks={"a": {**_run()["tasks"]["a"], "data": {"kind": "local", "root": "/d"}}})).items == []
    assert _said(compare(_run(tasks={"a": None}), _run(tasks={"a": None}))) == []


def test_a_folder_may_grow_but_a_task_left_out_is_said():
    more = _run(tasks={**_run()["tasks"], "b": {"hash": "x"}})
    assert compare(_run(), more).items == []
    assert _said(compare(_run(), more, grow=False)) == [(SELECTION, "tasks a -> a, b")]
    assert _said(compare(more, _run())) == [(SELECTION, "tasks a, b -> a")]
    assert _said(compare(_run(limit=None), _run(limit=2))) == [(SELECTION, "limit none -> 2")]
    assert _said(compare(_run(samples=[1]), _run(samples=[1, 2]))) == [(SELECTION, "samples [1] -> [1, 2]")]


def test_judges_by_role_and_predict_only_are_scoring():
    other = _run(judge_panels={"scorer": [{"kind": "openai", "name": "judge2"}]})
    assert _said(compare(_run(), other)) == [(SCORING, "judge scorer openai:judge -> openai:judge2")]
    extra = _run(judge_panels={"scorer": [{"kind": "openai", "name": "judge"}], "critic": [{"kind": "x"}]})
    assert compare(_run(), extra).items == []  # a role added on resume: no difference
    assert compare(extra, _run()).items == []
    assert _said(compare(_run(), extra, grow=False)) == [(SCORING, "judge critic none -> x")]
    assert _said(compare(extra, _run(), grow=False)) == [(SCORING, "judge critic x -> none")]
    labels = lambda j: {k: v for k, v in _run(judges=j).items() if k != "judge_panels"}  # an older run.json
    assert _said(compare(labels({"scorer": ["a"]}), labels({"scorer": ["b"]}))) == [(SCORING, "judge scorer a -> b")]
    assert _said(compare(_run(), _run(predict_only=True))) == [(SCORING, "predict-only off -> on")]
    assert compare(_run(predict_only=None), _run(predict_only=False)).items == []


def test_plugins_are_code_and_how_settings_are_how():
    assert _said(compare(_run(), _run(plugins={"avhb-testpack": "1.1"}))) == [
        (CODE, 'plugins {"avhb-testpack": "1.0"} -> {"avhb-testpack": "1.1"}')]
    faster = _run(model={**_run()["model"], "runtime": {"concurrency": 16, "timeout": 30}}, batch_size=8)
    assert _said(compare(_run(), faster)) == [(HOW, "batch_size none -> 8"), (HOW, "concurrency 4 -> 16"),
                                              (HOW, "timeout none -> 30")]
    assert _said(compare(_run(), _run(model={**_run()["model"], "executor": "ray"}))) == [(HOW, "executor local -> ray")]
    assert compare(_run(), _run(command="avhb run --other")).items == []  # the command line itself is no setting


def test_how_settings_and_invocations():
    assert how_settings(_run(batch_size=2)) == {"batch_size": 2, "executor": "local", "concurrency": 4}
    assert how_settings({}) == {"batch_size": None, "executor": "local"}
    assert invocation(_run(), "2026-01-01") == {"at": "2026-01-01", "command": "avhb run",
                                                 "how": {"batch_size": None, "executor": "local", "concurrency": 4}}


def test_changes_by_kind_and_the_refusal_line(tmp_path):
    changes = compare(_run(), _run(seed=7, limit=3, batch_size=2))
    assert [d.kind for d in changes.of(CALLS, SELECTION)] == [CALLS, SELECTION]
    assert changes.said(CALLS) == "seed 1234 -> 7" and changes.said(HOW) == "batch_size none -> 2"
    assert changes.said(SCORING) == "" and changes.of() == []
    assert changes.said(CALLS, SELECTION) == "seed 1234 -> 7; limit none -> 3"
    line = refusal(tmp_path, changes)
    assert line == (f"{tmp_path} holds a run with other call settings: seed 1234 -> 7; use a new --output-dir for "
                    f"these settings, or pass --allow-config-change to run them in this folder (its finished results "
                    f"are then kept in {tmp_path / 'previous'}/)")
    assert str(Difference(CALLS, "k", "a", "b")) == "k a -> b"
    assert str(Difference(CALLS, "k", "a", "b", "label")) == "label a -> b"


def test_how_values_are_shown():
    assert show(None) == "none" and show(True) == "on" and show(False) == "off"
    assert show("plain text") == "plain text" and show("two\n  lines") == "two lines"
    assert show({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}' and show(0) == "0" and show([]) == "[]"
    assert show("x" * 160) == "x" * 160
    assert show("x" * 161) == "x" * 159 + "…" and len(show("y" * 500)) == 160
    assert show("x" * 11, limit=10) == "x" * 9 + "…" and show("x" * 10, limit=10) == "x" * 10


def test_identities_as_text():
    assert spec_text(None) == "none" and spec_text({}) == "none"
    assert spec_text({"kind": "hf", "name": "m", "args": {"b": 2, "a": "x y"}}) == "hf:m,a=x y,b=2"
    assert spec_text({"kind": "echo"}) == "echo"
    assert spec_text({"kind": "echo", "name": "", "args": "not a dict"}) == "echo"
    assert identity_of(None) is None and identity_of({}) is None
    assert identity_of({"identity": {"kind": "k"}, "kind": "other"}) == {"kind": "k"}
    assert identity_of({"kind": "k", "name": "n", "args": {}, "extra": 1}) == {"kind": "k", "name": "n", "args": {}}


def _long(n: int) -> str:
    return ("m" * n)[:n]


def test_long_values_are_cut_at_their_kinds_width():
    """Identities keep 400 characters, task lists 120, other values 160:
    the one line stays readable however long a spec is."""
    ident = lambda name: {"kind": "k", "name": name}
    cut = lambda text, width: text if len(text) <= width else text[:width - 1] + "…"
    for n in (397, 398, 399):  # "k:" + name: 399, 400 and 401 characters
        [d] = compare(_run(model={"identity": ident(_long(n))}), _run(model={"identity": ident(_long(n) + "x")})).items
        assert (d.old, d.new) == (cut("k:" + _long(n), 400), cut("k:" + _long(n) + "x", 400)), n
        panels = lambda name: _run(judge_panels={"scorer": [ident(name)]})
        [d] = compare(panels(_long(n)), panels(_long(n) + "x")).items
        assert (d.old, d.new) == (cut("k:" + _long(n), 400), cut("k:" + _long(n) + "x", 400)), n
    for n in (119, 120, 121):  # a task list of that many characters
        name = _long(n - 4)
        old = _run(tasks={name: {"hash": "h"}, "zz": {"hash": "h"}})
        new = _run(tasks={"zz": {"hash": "h"}})
        [d] = compare(old, new).items
        assert d.old == cut(f"{name}, zz", 120) and d.new == "zz"
        [d] = compare(new, _run(tasks={"zz": {"hash": "h"}, name: {"hash": "h"}}), grow=False).items
        assert d.new == cut(f"{name}, zz", 120) and len(f"{name}, zz") == n
