"""The random and scripted baselines, and how option replies are named."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from avhb.model.backend import BackendSpec, parse_backend_spec
from avhb.errors import UserError
from avhb.model.messages import AudioPart, Message, Request, TextPart, text_request
from avhb.model_backends.baselines import RandomBackend, ScriptedBackend, option_replies, prompt_text
from avhb.model_backends.plugin import avhb_backends
from avhb.registry import import_path

BACKENDS = avhb_backends()


def mcq(question: str, choices: list[str], key: str = "", lettered: bool = True) -> Request:
    body = question
    if lettered:
        body += "\n" + "\n".join(f"{'ABCD'[i]}. {c}" for i, c in enumerate(choices))
    req = text_request(body)
    req.choices = choices
    req.key = key
    return req


# ---------------------------------------------------------------- option_replies


def test_option_replies_lettered_in_prompt():
    assert option_replies(mcq("Where?", ["on the desk", "under the desk", "on the shelf"])) == ["A", "B", "C"]


@pytest.mark.parametrize("fmt", ["({L}). {c}", "({L}) {c}", "{L}) {c}", "{L}: {c}", "  {L}.{c}"])
def test_option_replies_label_styles(fmt):
    choices = ["Retail", "Cloud"]
    body = "Which grew?\n" + "\n".join(fmt.format(L="AB"[i], c=c) for i, c in enumerate(choices))
    req = text_request(body)
    req.choices = choices
    assert option_replies(req) == ["A", "B"]


def test_option_replies_plain_texts_and_yes_no():
    assert option_replies(mcq("Is it red?", ["yes", "no"], lettered=False)) == ["yes", "no"]
    # one option missing from the prompt's lettered list -> not lettered
    req = text_request("Pick:\nA. red\nB. blue")
    req.choices = ["red", "green"]
    assert option_replies(req) == ["red", "green"]
    # letters out of order are not a lettering
    req = text_request("Pick:\nB. red\nA. blue")
    req.choices = ["red", "blue"]
    assert option_replies(req) == ["red", "blue"]


def test_option_replies_self_labelled_choices():
    req = text_request("Pick one")
    req.choices = ["A. red", "B. blue"]
    assert option_replies(req) == ["A", "B"]
    req.choices = ["B. red", "A. blue"]
    assert option_replies(req) == ["B. red", "A. blue"]
    req.choices = None
    assert option_replies(req) == []


def test_prompt_text_joins_text_parts_only():
    req = Request(messages=[Message("system", [TextPart("sys")]),
                            Message("user", [TextPart("a"), AudioPart(path="x.wav"), TextPart("b")])])
    assert prompt_text(req) == "sys\na\nb"


# ---------------------------------------------------------------- random


async def test_random_is_deterministic_in_seed_and_key():
    b0 = RandomBackend(parse_backend_spec("random,seed=0"))
    b0_again = RandomBackend(parse_backend_spec("random,seed=0"))
    b1 = RandomBackend(parse_backend_spec("random,seed=1"))
    reqs = [mcq("Q?", ["w", "x", "y", "z"], key=f"k{i}") for i in range(200)]
    first = [(await b0.generate(r)).text for r in reqs]
    assert first == [(await b0_again.generate(r)).text for r in reqs]
    assert first == [(await b0.generate(r)).text for r in reqs]
    other = [(await b1.generate(r)).text for r in reqs]
    assert sum(a != b for a, b in zip(first, other)) > 100  # ~150 expected for 4 options
    assert set(first) == {"A", "B", "C", "D"}  # lettered options answer with letters


async def test_random_uses_prompt_when_key_is_empty():
    b = RandomBackend(BackendSpec("random", "", {}))
    answers = {(await b.generate(mcq(f"Question {i}?", ["p", "q"], lettered=False))).text for i in range(40)}
    assert answers == {"p", "q"}
    same = [(await b.generate(mcq("Fixed?", ["p", "q"], lettered=False))).text for _ in range(5)]
    assert len(set(same)) == 1


def chi_square(counts: Counter, n: int, k: int) -> float:
    expected = n / k
    return sum((counts.get(i, 0) - expected) ** 2 / expected for i in range(k))


async def test_random_uniform_over_choices_chi_square():
    b = RandomBackend(parse_backend_spec("random,seed=7"))
    n = 2000
    counts = Counter()
    for i in range(n):
        reply = (await b.generate(mcq("Q?", ["a1", "b1", "c1", "d1"], key=f"sample-{i}"))).text
        counts["ABCD".index(reply)] += 1
    # 3 degrees of freedom: P(chi2 > 16.27) = 0.001
    assert chi_square(counts, n, 4) < 16.27, counts
    assert all(400 < counts[i] < 600 for i in range(4)), counts


async def test_random_yes_no_without_choices():
    b = RandomBackend(parse_backend_spec("random"))
    n = 2000
    counts = Counter()
    for i in range(n):
        req = text_request("Is there a dog?")
        req.key = f"{i:08x}"
        resp = await b.generate(req)
        counts[["yes", "no"].index(resp.text)] += 1
        assert resp.meta["options"] == 2
    assert chi_square(counts, n, 2) < 10.83, counts  # 1 dof, p = 0.001


def test_random_rejects_non_integer_seed():
    with pytest.raises(UserError, match="seed"):
        RandomBackend(parse_backend_spec("random,seed=abc"))


def test_random_describe_is_honest():
    d = RandomBackend(parse_backend_spec("random")).describe()
    assert d["capabilities"]["sees_pixels"] is False
    assert "ignores" in d["note"]


# ---------------------------------------------------------------- scripted


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


async def test_scripted_yaml_rules_ids_first_then_substrings(tmp_path):
    path = write(tmp_path, "r.yaml", """
- {match: "capital of France", reply: "Paris"}
- {id: "s-2", reply: "by id"}
- {match: "overloaded", error: "HTTP 503"}
- {match: "France", reply: "never reached"}
""")
    b = ScriptedBackend(parse_backend_spec(f"scripted,replies={path}"))
    r1 = text_request("What is the capital of France?")
    assert (await b.generate(r1)).text == "Paris"
    r2 = text_request("What is the capital of France?")
    r2.key = "s-2"
    assert (await b.generate(r2)).text == "by id"  # id beats an earlier substring rule
    r3 = text_request("server overloaded")
    resp = await b.generate(r3)
    assert resp.error == "HTTP 503" and resp.text == ""
    assert b.requests == [r1, r2, r3]


async def test_scripted_sample_id_attribute(tmp_path):
    path = write(tmp_path, "r.yaml", "- {id: [a, b], reply: two}\n")
    b = ScriptedBackend(parse_backend_spec(f"scripted,replies={path}"))
    req = text_request("x")
    req.fields["sample_id"] = "b"  # the evaluator records the sample id here
    assert (await b.generate(req)).text == "two"


async def test_scripted_json_mapping_and_unmatched_error(tmp_path):
    path = write(tmp_path, "r.json", json.dumps({"dog": "yes", "k-9": "B"}))
    b = ScriptedBackend(parse_backend_spec(f"scripted,replies={path}"))
    assert (await b.generate(text_request("Is there a dog?"))).text == "yes"
    keyed = text_request("unrelated")
    keyed.key = "k-9"
    assert (await b.generate(keyed)).text == "B"
    resp = await b.generate(text_request("Is there a cat?"))
    assert resp.text == "" and "no reply" in resp.error and "Is there a cat?" in resp.error


@pytest.mark.parametrize("body,match", [
    ("[1, 2]", "needs 'id' or 'match'"),
    ("- {match: a}", "needs 'id' or 'match', and 'reply' or 'error'"),
    ("- {match: a, reply: b, extra: 1}", "unknown key"),
    ("just a string", "mapping or a list"),
    ("{a: {nested: 1}}", "must be a string"),
    ("- {match: [unclosed", "cannot parse"),
])
def test_scripted_bad_files(tmp_path, body, match):
    path = write(tmp_path, "r.yaml", body)
    with pytest.raises(UserError, match=match):
        ScriptedBackend(parse_backend_spec(f"scripted,replies={path}"))


def test_scripted_missing_file_and_arg(tmp_path):
    with pytest.raises(UserError, match="not found"):
        ScriptedBackend(parse_backend_spec(f"scripted,replies={tmp_path / 'nope.yaml'}"))
    with pytest.raises(UserError, match="replies=PATH"):
        ScriptedBackend(parse_backend_spec("scripted"))


def test_scripted_capabilities_and_identity(tmp_path):
    path = write(tmp_path, "r.yaml", "{a: b}")
    plain = ScriptedBackend(parse_backend_spec(f"scripted,replies={path}"))
    assert plain.capabilities.images == 0 and not plain.capabilities.sees_pixels
    rich = ScriptedBackend(parse_backend_spec(f"scripted,replies={path},images=4,video=true,audio=true"))
    caps = rich.capabilities
    assert (caps.images, caps.video, caps.audio, caps.sees_pixels) == (4, True, True, True)
    before = plain.identity["replies_sha256"]
    path.write_text("{a: c}")
    assert plain.identity["replies_sha256"] != before  # edited replies are a different backend


def test_baseline_identity_shapes(tmp_path):
    path = write(tmp_path, "r.yaml", "{a: b}")
    rand = RandomBackend(parse_backend_spec("random,seed=5")).identity
    assert rand == {"kind": "random", "name": "", "args": {"seed": 5}}
    scripted = ScriptedBackend(parse_backend_spec(f"scripted,replies={path}")).identity
    assert set(scripted) == {"kind", "name", "args", "replies_sha256"} and scripted["args"] == {"replies": str(path)}


def test_every_builtin_backend_imports():
    from avhb.model.backend import Backend

    assert set(BACKENDS) == {"local", "cascade", "random", "scripted", "openai", "openai-completions", "azure", "litellm", "vllm"}
    for path in BACKENDS.values():
        assert issubclass(import_path(path), Backend)
