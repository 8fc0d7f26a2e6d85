"""Key stability (issue 26): the journal keys of fixed requests, pinned as
hex digests computed by the key scheme every existing journal was written
with (``json.dumps(payload, sort_keys=True, default=str)`` of the key's
payload).  A faster encoding of the key must give these exact digests, or
every finished run's journal stops answering its calls."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from avhb.call.caller import request_key
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart

IDENTITY = {"kind": "openai", "name": "gpt-4o-mini", "args": {"base_url": "http://127.0.0.1:8000/v1",
                                                               "concurrency": 32, "timeout": 60.0}}


def _cases():
    text = Request([Message("user", [TextPart("Question 1: which letter comes first? Answer with the letter.")])],
                   generation={"max_tokens": 4, "temperature": 0.0, "until": ["\n\n"], "seed": 1234})
    text.fields = {"task": "tputpack/tput_text", "sample_id": "q00001"}
    chat = Request([Message("system", [TextPart("Be brief. «ünïcode» — 日本語")]),
                    Message("user", [TextPart("line one\nline \"two\"\t\\ tab")]),
                    Message("assistant", [TextPart("B")]), Message("user", [TextPart("again?")])],
                   generation={"temperature": 0.7, "top_p": 0.95, "max_gen_toks": 256, "nan": float("nan")},
                   choices=["A", "B", "C"], prompt="a plain prompt that differs from the messages")
    chat.fields = {"task": "t", "sample_id": "7", "extra": {"z": 1, "a": [1, 2.5, None, True]}, "path": Path("/x/y")}
    ll = Request([Message("user", [TextPart("ctx")])], loglikelihood=[("ctx", " yes"), ("ctx", " no")])
    rolling = Request([Message("user", [TextPart("whole text")])], loglikelihood=[("", "whole text")], rolling=True,
                      prompt="whole text")
    media = Request([Message("user", [
        VideoPart(path="/nonexistent/clip.mp4", segment=(1.5, 9.0), sampling={"fps": 1.0, "frames": 8},
                  labelled=False),
        AudioPart(path="/nonexistent/clip.wav", segment=(0.0, 3.0), transcript="hello", language="en"),
        AudioPart(path=None),
        ImagePart(array=np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3), label="[1]"),
        ImagePart(path="/nonexistent/img.png"),
        TextPart("What happens?")])], generation={"max_tokens": 16})
    return {
        "text": (IDENTITY, text, {"repeat": 0, "media": {"fps": None, "frames": 8}, "ablations": []}),
        "chat": ({"kind": "k"}, chat, {"repeat": 2, "step": "look", "attempt": 1}),
        "loglikelihood": (IDENTITY, ll, None),
        "rolling": (IDENTITY, rolling, {}),
        "media": (IDENTITY, media, {"repeat": 0, "ablations": ("no_audio",)}),
        "empty": ({}, Request([]), None),
    }


PINNED = {
    "text": "5be8bf77b2c9476be459c11601e8295f996020f4053b02de054c4406c98a5a66",
    "chat": "254f0bc8450ab25f336aa7ee3b354677cb62e7fbe42fbdddb2899c9d9f8a8662",
    "loglikelihood": "aa6b564e4c7f0e9caaa2b51ad0a031a215f2a1951e84a07bf25112dbebcfc4a5",
    "rolling": "93b07d39cf0837d4214c6a50524aff799353178e6bc1eae4830734e95eba2f0a",
    "media": "c895a89a1b6fec2722ce1c1dccd5c9b7513b4617e8f6ae3745ca2bce3342c180",
    "empty": "da1f2382cfa626ccfc4fec5e79924bcf4e9a5ee50db03337b2bf00c9383e0a8e",
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_keys_of_fixed_requests_are_the_ones_existing_journals_hold(name):
    identity, request, context = _cases()[name]
    assert request_key(identity, request, context) == PINNED[name]


def _generic_key(identity, request, context=None):
    """The key as it was first written: one generic ``json.dumps`` of the payload."""
    import hashlib
    import json

    from avhb.call.caller import part_reference

    payload = {"backend": identity, "messages": [[m.role, [part_reference(p) for p in m.parts]] for m in request.messages],
               "generation": request.generation, "choices": request.choices, "fields": request.fields,
               "context": context or {}}
    if request.loglikelihood is not None:
        payload["loglikelihood"] = [list(pair) for pair in request.loglikelihood]
        payload["rolling"] = request.rolling
    if request.prompt is not None and request.prompt != "".join(m.text for m in request.messages):
        payload["prompt"] = request.prompt
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def test_the_key_equals_the_generic_encoding_over_varied_requests():
    import random

    rng = random.Random(26)
    words = ["", "a", "é", "\n", '"', "\\", "日本", "\x00", "key", "{}", "1.5"]
    for _ in range(300):
        def text():
            return "".join(rng.choice(words) for _ in range(rng.randrange(4)))
        msgs = [Message(rng.choice(["system", "user", "assistant"]), [TextPart(text()) for _ in range(rng.randrange(3))])
                for _ in range(rng.randrange(4))]
        request = Request(msgs, generation={text(): rng.choice([0, 0.5, None, [text()], {"b": 1, "a": 2}])
                                            for _ in range(rng.randrange(3))},
                          choices=rng.choice([None, [text(), text()]]), prompt=rng.choice([None, text(), ""]),
                          loglikelihood=rng.choice([None, [(text(), text())]]), rolling=rng.choice([False, True]))
        request.fields = {text(): rng.choice([1, text(), Path("/p"), (1, 2)]) for _ in range(rng.randrange(3))}
        context = rng.choice([None, {}, {"repeat": rng.randrange(3), "step": text()}])
        identity = rng.choice([{}, IDENTITY, {"kind": text(), "z": [1, {"y": None}]}])
        assert request_key(identity, request, context) == _generic_key(identity, request, context)


def test_a_callers_key_is_the_pinned_key(tmp_path):
    from avhb.call.caller import Caller
    from avhb.runfolder.journal import Journal

    identity, request, context = _cases()["text"]
    caller = Caller(Journal(tmp_path), "responses", identity=identity)
    assert caller.key(request, None, context) == PINNED["text"]
    assert caller.key(request, None, context) == PINNED["text"]  # the identity's encoding, kept, gives the same
    caller.identity = {"kind": "k"}  # another identity: encoded again
    _, chat, chat_context = _cases()["chat"]
    assert caller.key(chat, None, chat_context) == PINNED["chat"]
