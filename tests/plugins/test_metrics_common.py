"""Field specs: where a metric option reads a value from a sample record."""
import pytest

from avhb.score.metric_helpers import resolve
from avhb.score.metric import SampleRecord


def test_field_specs():
    r = SampleRecord(id="7", doc={"q": {"text": "hi"}}, target={"spans": [[1, 2]]}, response="raw",
                     extracted={"intervals": [[0, 1]], "boxes": {"1": [0, 0, 2, 2]}},
                     outputs={"gold_boxes": {"1": [0, 0, 1, 1]}, "n": 3})
    r.meta["m"] = 1
    r.scores["s"] = 0.5
    assert resolve(r, "response") == "raw" and resolve(r, "id") == "7"
    assert resolve(r, "doc.q.text") == "hi" and resolve(r, "meta.m") == 1 and resolve(r, "scores.s") == 0.5
    assert resolve(r, "outputs.gold_boxes") == {"1": [0, 0, 1, 1]} and resolve(r, "outputs.n") == 3
    assert resolve(r, "extracted.intervals") == [[0, 1]] and resolve(r, "extracted.boxes.1") == [0, 0, 2, 2]
    assert resolve(r, "target.spans") == [[1, 2]] and resolve(r, "extracted") == r.extracted
    assert resolve(r, "outputs.missing") is None and resolve(r, "literal:x") == "x"
    r.extracted = None  # an unparsed reply: every key under it is absent
    assert resolve(r, "extracted.intervals") is None
    with pytest.raises(ValueError):
        resolve(r, "nowhere.key")


def test_every_shipped_metric_has_a_real_one_line_description():
    """What the report and the printed table show beside each metric of
    every built-in task: a sentence for users, never a docstring's
    "Options: ``...``" or "(module docstring)"."""
    from avhb.registry import get_registry
    from avhb.taskdef.index import build_index, load_task
    from avhb.run.task import Task

    registry = get_registry()
    index = build_index(registry)
    seen = {}
    for name in (t for t in index.tasks if "/" not in t):
        for m in Task(load_task(index, name), registry).metrics():
            seen[type(m).__qualname__] = m
    for name in registry.names("metrics"):  # avhb's own (a plugin's names are namespaced)
        cls = registry.load("metrics", name)
        if name != "evaluate" and "/" not in name:
            seen.setdefault(cls.__qualname__, cls.__new__(cls))
            seen[cls.__qualname__].name = seen[cls.__qualname__].name or name
    assert len(seen) > 20
    for qualname, m in seen.items():
        text = m.describe(m.name).description
        assert text and "``" not in text and "docstring" not in text and not text.startswith("Options"), \
            (qualname, text)


def test_options_are_checked_against_the_declaration_and_undeclared_plugins_still_run(capsys):
    from avhb.errors import UserError
    from avhb.plugins.metrics.choice import ExactMatch
    from avhb.score.metric import Metric

    with pytest.raises(UserError, match=r"metric 'em': unknown option 'ignroe_case'; did you mean 'ignore_case'\? "
                                        r"\(its options: ignore_case, ignore_numbers, ignore_punctuation, regexes_to_ignore\)"):
        ExactMatch(name="em", ignroe_case=True)

    class Legacy(Metric):  # a plugin metric from before Metric.accepts
        name = "legacy"

    assert Legacy.accepted_options() is None
    assert Legacy(knob=1).options == {"knob": 1} and Legacy(knob=2).options == {"knob": 2}
    err = capsys.readouterr().err
    assert err.count("does not declare the options it reads (Metric.accepts): 'knob' not checked") == 1

    class Strict(Legacy):
        accepts: dict = {}

    with pytest.raises(UserError, match=r"unknown option 'knob' \(its options: none\)"):
        Strict(knob=1)
