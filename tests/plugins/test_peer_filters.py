"""The peers' filters in avhb: a filter class given by ``!function`` (run
through :class:`avhb.score.peer_filter.PeerFilter`, the peers' batch
``apply(resps, docs)`` one sample at a time), a filter a task module
registers in a peer's registry, and the built-ins that carry lm-eval's and
lmms-eval's own filters (``multi_choice_regex``, ``regex_pos``,
``format_span``, ``strip_thinking``), pinned on cases worked out by hand
from the peers' source (lm-eval 0.4.13 ``filters/extraction.py`` and
``filters/transformation.py``, lmms-eval 0.7.3 ``api/reasoning.py``) and,
where the peers' venvs exist (scripts/peer_envs.sh), against what their
own filter classes return for the same input."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from avhb.plugins.metrics.filters import FormatSpan, MultiChoiceRegex, RegexPos, StripThinking
from avhb.registry import get_registry
from avhb.run.score_phase import score
from avhb.run.task import Task
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.score.peer_filter import PeerFilter, is_peer_filter, registered_by_peer
from avhb.taskdef import include_path as include
from avhb.taskdef.config import TaskConfig

ROOT = Path(__file__).resolve().parents[2]
CTX = ScoreContext(None, "t")

# -- filters written for the peers, given by !function -------------------------------------------------------------

HOOKS = '''
class KeepWords:
    """A peer-style filter that reads the doc: each answer's words that are in doc["words"], in order."""

    def __init__(self, sep=" "):
        self.sep = sep

    def apply(self, resps, docs):
        out = []
        for answers, doc in zip(resps, docs):
            out.append([self.sep.join(w for w in a.split() if w in doc["words"]) for a in answers])
        return out


class Last:
    """A peer-style selection: each sample's last answer (not a list)."""

    def apply(self, resps, docs):
        return map(lambda answers: answers[-1], resps)


class Batch:
    """Records the batch shapes it is given."""

    seen = []

    def apply(self, resps, docs):
        Batch.seen.append((len(resps), [list(r) for r in resps], len(docs)))
        return [[a.upper() for a in answers] for answers in resps]
'''

DOC = {"q": "sort", "words": ["apple", "kiwi", "plum"]}


@pytest.fixture
def hooks(tmp_path):
    folder = tmp_path / "peerf"
    folder.mkdir()
    (folder / "t.yaml").write_text("task: t\n")
    (folder / "utils.py").write_text(textwrap.dedent(HOOKS))
    namespace = include.add_include_path(folder)
    yield folder, include.package_of(namespace)
    include.clear()


def _task(hooks, filter_list) -> Task:
    folder, package = hooks
    cfg = TaskConfig("peerf/t", folder / "t.yaml", package, "",
                     {"task": "t", "doc_to_text": "{{q}}", "filter_list": filter_list})
    return Task(cfg, get_registry())


def _extracted(task: Task, *responses: str):
    records = [SampleRecord(id="0", doc=DOC, response=r, repeat=k) for k, r in enumerate(responses)]
    asyncio.run(score(task, records, [], None))
    assert records[0].error is None, records[0].error
    return records[0].extracted


def fn(name: str) -> dict:
    return {"function": f"utils.{name}"}  # what `!function utils.NAME` loads as


def test_a_function_filter_in_a_pipeline_gets_every_repeat_and_the_doc(hooks):
    pipeline = [{"name": "kept", "filter": [{"function": fn("KeepWords"), "sep": "+"}, {"function": "take_first"}]},
                {"name": "all", "filter": [{"function": fn("KeepWords")}]}]
    task = _task(hooks, pipeline)
    assert all(isinstance(steps[0], PeerFilter) for _, steps in task.filter_pipelines())
    assert _extracted(task, "plum then apple", "kiwi pear") == {"kept": "plum+apple", "all": ["plum apple", "kiwi"]}


def test_the_peer_gets_one_sample_as_a_batch_of_one(hooks):
    task = _task(hooks, [{"name": "up", "filter": [{"function": fn("Batch")}]}])
    seen = task.hook("utils.Batch").seen
    seen.clear()
    assert _extracted(task, "a", "b", "c") == {"up": ["A", "B", "C"]}
    assert seen == [(1, [["a", "b", "c"]], 1)]


def test_a_peer_selection_gives_its_value_and_one_answer_is_unwrapped(hooks):
    assert _extracted(_task(hooks, [{"name": "last", "filter": [{"function": fn("Last")}]}]), "x", "y") == {"last": "y"}
    # after a selection, one answer (as avhb's own filters take it): the peer's list of one comes back unwrapped
    after = [{"name": "p", "filter": [{"function": "take_first"}, {"function": fn("KeepWords")}]}]
    assert _extracted(_task(hooks, after), "apple pie", "kiwi") == {"p": "apple"}


def test_a_function_filter_in_avhbs_chain_filters_the_one_answer(hooks):
    task = _task(hooks, [{"function": "utils.KeepWords", "sep": ","}, {"filter": "uppercase"}])
    assert isinstance(task.filters()[0], PeerFilter)
    assert _extracted(task, "a plum and a kiwi") == "PLUM,KIWI"


async def test_peer_filter_directly():
    class Upper:
        def apply(self, resps, docs):
            return [[a.upper() for a in answers] for answers in resps]

    step = PeerFilter(Upper(), "upper")
    record = SampleRecord(id="0", doc={})
    assert await step.apply("ab", record, CTX) == "AB"
    assert await step.apply_all(["ab", "cd"], record, CTX) == ["AB", "CD"]
    assert await step.apply_all("ab", record, CTX) == "AB"  # lm-eval would iterate the characters
    assert is_peer_filter(Upper()) and not is_peer_filter(StripThinking()) and not is_peer_filter(object())


def test_a_filter_a_task_module_registers_in_a_peers_registry_is_found(monkeypatch, hooks):
    class Registered:
        def apply(self, resps, docs):
            return [[f"<{a}>" for a in answers] for answers in resps]

    def get_filter(name):
        if name != "wrapped":
            raise KeyError(name)
        return Registered

    monkeypatch.setitem(sys.modules, "lm_eval.api.registry", types.SimpleNamespace(get_filter=get_filter))
    assert registered_by_peer("wrapped") is Registered and registered_by_peer("other") is None
    task = _task(hooks, [{"name": "w", "filter": [{"function": "wrapped"}, {"function": "take_first"}]}])
    assert _extracted(task, "a", "b") == {"w": "<a>"}
    monkeypatch.delitem(sys.modules, "lm_eval.api.registry")
    monkeypatch.setitem(sys.modules, "lmms_eval.filters", types.SimpleNamespace(FILTER_REGISTRY={"lm": Registered}))
    assert registered_by_peer("lm") is Registered and registered_by_peer("wrapped") is None


# -- the built-ins that carry the peers' filters ---------------------------------------------------------------------

CHOICES = {"choices": ["Paris", "London", "Paris Hilton"]}

# (filter, options, answers, doc, what the peer's filter returns for them, worked out by hand)
CASES = [
    # the default pattern (#### number) misses; then the choices' texts, longest first ("Paris Hilton", not
    # "Paris"); then a letter after a colon; else the fallback ("(B)" alone matches neither)
    ("multi_choice_regex", {}, ["The answer is (B)", "I think Paris Hilton is right", "answer: B", "nothing",
                                "I say LONDON!"], CHOICES, ["[invalid]", "(C)", "(B)", "[invalid]", "[invalid]"]),
    ("multi_choice_regex", {"regex_pattern": r"(\([A-Z]\))"}, ["The answer is (B)", "(A) or (C)"], CHOICES,
     ["(B)", "(A)"]),
    ("multi_choice_regex", {"regex_pattern": r"(\([A-Z]\))", "group_select": -1}, ["(A) or (C)"], CHOICES, ["(C)"]),
    # ignore_case and ignore_punctuation apply to the choices' texts and the answer alike
    ("multi_choice_regex", {"ignore_case": True, "ignore_punctuation": True}, ["I say LONDON!", "pa-ris"], CHOICES,
     ["(B)", "(A)"]),
    # regexes_to_ignore: white space removed, so "Paris Hilton" is searched as "ParisHilton"
    ("multi_choice_regex", {"regexes_to_ignore": [r"\s+"]}, ["It is Paris Hilton", "ParisHilton!"], CHOICES,
     ["(C)", "(C)"]),
    # group_select applies to the choices' search too: the last choice named
    ("multi_choice_regex", {"group_select": -1}, ["Paris or maybe London"], CHOICES, ["(B)"]),
    ("multi_choice_regex", {"fallback": "?"}, ["none of them"], CHOICES, ["?"]),
    # the tags of ('token', 'TAG') pairs; none: ["invalid"]; a list of pairs is read as it is
    ("regex_pos", {}, ["[('The', 'DET'), ('cat', 'NOUN')]", "no tags", [["a", "X"]]], {},
     [["DET", "NOUN"], ["invalid"], ["X"]]),
    ("regex_pos", {"fallback": ["?"]}, ["no tags"], {}, [["?"]]),
    # lower-cased; label words before a colon -> PER/LOC/ORG/DATE; newlines -> $; "none" dropped;
    # "$$" -> "$"; a later label inside an earlier one's values stays there (lm-eval's reading)
    ("format_span", {}, ["Person: John Smith, Jane\nLocation: Paris\nOrganization: none", "per: a $$ loc: b$$",
                         "Time:2020, Country: Kenya"], {},
     ["per: john smith $ per: jane $ loc: paris", "per: a $ loc: b", "date: 2020 $ date: LOC: kenya"]),
    # <think> and <thinking> blocks; only a closing tag: what follows it; an open tag alone stays; None passes
    ("strip_thinking", {}, ["<think>a</think> B", "plan</think>C", "<think>open only", None,
                            "<thinking>x</thinking>y<think>z</think> w"], {},
     ["B", "C", "<think>open only", None, "y w"]),
    ("strip_thinking", {"tag_pairs": [["<r>", "</r>"]]}, ["<r>1</r>2", "<think>a</think>b"], {}, ["2", "<think>a</think>b"]),
]

OURS = {"multi_choice_regex": MultiChoiceRegex, "regex_pos": RegexPos, "format_span": FormatSpan,
        "strip_thinking": StripThinking}


@pytest.mark.parametrize("name, options, answers, doc, expected", CASES)
async def test_the_builtin_returns_what_the_peers_filter_returns(name, options, answers, doc, expected):
    record = SampleRecord(id="0", doc=doc)
    assert await OURS[name](**options).apply_all(answers, record, CTX) == expected
    assert [await OURS[name](**options).apply(a, record, CTX) for a in answers] == expected


async def test_multi_choice_regex_counts_a_miss():
    record = SampleRecord(id="0", doc=CHOICES)
    await MultiChoiceRegex().apply("nothing", record, CTX)
    assert record.meta["filter_misses"] == ["multi_choice_regex"]


PEER_SCRIPT = """
import json, sys
cases = json.load(sys.stdin)
if sys.argv[1] == "lm_eval":
    from lm_eval.filters.extraction import MultiChoiceRegexFilter, POSFilter
    from lm_eval.filters.transformation import SPANFilter
    classes = {"multi_choice_regex": MultiChoiceRegexFilter, "regex_pos": POSFilter, "format_span": SPANFilter}
else:
    from lmms_eval.filters.transformation import StripThinkingFilter
    classes = {"strip_thinking": StripThinkingFilter}
out = []
for name, options, answers, doc in cases:
    if name not in classes:
        out.append(None)
        continue
    answers = [tuple(map(tuple, a)) if isinstance(a, list) else a for a in answers]  # lm-eval's (token, tag) pairs
    out.append([list(r) for r in classes[name](**options).apply([answers], [doc])][0])
print(json.dumps(out))
"""


def _venv_python(env: str, default: str) -> Path:
    return ROOT / os.environ.get(env, default) / "bin" / "python"


@pytest.mark.slow  # the peers' venvs: up to 20 s
@pytest.mark.parametrize("peer, env, default", [("lm_eval", "AVHB_LMEVAL_VENV", ".venv-lmeval"),
                                                ("lmms_eval", "AVHB_LMMS_VENV", ".venv-lmms")])
def test_the_peers_own_filters_return_the_hand_worked_answers(peer, env, default):
    python = _venv_python(env, default)
    if not python.exists() or subprocess.run([str(python), "-c", f"import {peer}"], capture_output=True).returncode:
        pytest.skip(f"{peer} is not installed: run scripts/peer_envs.sh")
    cases = [[name, options, answers, doc] for name, options, answers, doc, _ in CASES]
    proc = subprocess.run([str(python), "-c", PEER_SCRIPT, peer], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout)
    compared = [(case[0], got, case[4]) for case, got in zip(CASES, theirs) if got is not None]
    assert compared, "no case was run by the peer"
    for name, got, expected in compared:
        assert got == expected, (name, got, expected)
