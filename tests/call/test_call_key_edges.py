"""The call key's pieces and the journal-hit decision (avhb/call/caller.py),
each pinned by a case its mutation run left open: every field of the key
moves it, a media part's segment, sampling, transcript, language and label
do, a part without a file and a file that cannot be read have keys of
their own, and what a call journals, replays, prices and refuses."""
from __future__ import annotations

import numpy as np
import pytest

from avhb.model.backend import Backend, BackendSpec, Capabilities
from avhb.call.caller import Caller, NotInJournal, SpendLimit, media_files, part_reference, request_key
from avhb.model.messages import AudioPart, ImagePart, Message, Request, Response, TextPart, VideoPart
from avhb.model.prices import Prices
from avhb.runfolder.journal import Journal


class Scripted(Backend):
    capabilities = Capabilities(images=4, video=True, audio=True)

    def __init__(self, spec, replies):
        super().__init__(spec)
        self.replies = list(replies)
        self.seen: list[Request] = []

    async def generate(self, request):
        self.seen.append(request)
        return self.replies.pop(0)


def _text(prompt, **kw):
    return Request([Message("user", [TextPart(prompt)])], **kw)


def _clip(tmp_path, name="clip.mp4", data=b"frames" * 100):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_every_field_of_the_key_moves_it():
    base = request_key({"kind": "k", "name": "m"}, _text("q"), {"repeat": 0})
    assert request_key({"kind": "k", "name": "m"}, _text("q"), {"repeat": 0}) == base
    others = [
        request_key({"kind": "k", "name": "m2"}, _text("q"), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, _text("q2"), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, Request([Message("system", [TextPart("q")])]), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, _text("q", generation={"temperature": 0.7}), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, _text("q", choices=["a", "b"]), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, _text("q", fields={"id": 3}), {"repeat": 0}),
        request_key({"kind": "k", "name": "m"}, _text("q"), {"repeat": 1}),
        request_key({"kind": "k", "name": "m"}, _text("q")),
    ]
    assert len({base, *others}) == len(others) + 1
    assert request_key({}, _text("q")) == request_key({}, _text("q"), {}) == request_key({}, _text("q"), None)
    assert len(base) == 64 and int(base, 16) >= 0


def test_the_keys_of_media_parts_by_what_changes_the_answer(tmp_path):
    clip = _clip(tmp_path)
    video = lambda **kw: part_reference(VideoPart(path=clip, **kw))
    assert video(segment=(1.0, 2.0)) != video(segment=(1.0, 3.0)) != video()
    assert video(sampling={"fps": 2}) != video(sampling={"fps": 1}) != video()
    assert video(sampling={}) == video()  # no per-part sampling: the task's
    assert video(frames=[1, 2], fps=25.0) == video()  # what decoding fills in is not the request
    audio = lambda **kw: part_reference(AudioPart(path=clip, **kw))
    assert audio(segment=(0.0, 1.0)) != audio()
    assert audio(transcript="hello") != audio(transcript="hallo") != audio()
    assert audio(language="de") != audio(language="en") != audio()
    assert audio(language="") == audio()
    assert part_reference(ImagePart(path=clip, label="[1]")) != part_reference(ImagePart(path=clip, label="[2]"))
    kinds = {part_reference(VideoPart(path=clip))[0], part_reference(AudioPart(path=clip))[0],
             part_reference(ImagePart(path=clip))[0], part_reference(TextPart("x"))[0]}
    assert kinds == {"video", "audio", "image", "text"}
    assert part_reference(object()) == ["object"]


def test_a_part_without_a_file_and_an_unreadable_one_have_keys_of_their_own(tmp_path):
    clip = _clip(tmp_path)
    present = part_reference(AudioPart(path=clip))[1]
    no_path = part_reference(AudioPart(array=np.zeros(10, np.float32), rate=16000))[1]
    missing = part_reference(AudioPart(path=str(tmp_path / "gone.wav")))[1]
    folder = part_reference(AudioPart(path=str(tmp_path)))[1]  # not a regular file
    empty = part_reference(AudioPart(path=_clip(tmp_path, "empty.wav", b"")))[1]
    assert (no_path, missing, folder, empty) == ("-", "missing", "missing", "missing")
    assert len(present) == 32 and present not in ("-", "missing")
    assert part_reference(ImagePart(label="[1]"))[2] == "-"
    pixels = part_reference(ImagePart(array=np.zeros((2, 2, 3), np.uint8), path=clip))[2]
    assert pixels.startswith("pixels:") and len(pixels) == len("pixels:") + 32  # the array wins over the path
    strided = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)[:, ::2]  # not contiguous: hashed as its pixels
    assert (part_reference(ImagePart(array=strided))[2]
            == part_reference(ImagePart(array=np.ascontiguousarray(strided)))[2])


def test_media_files_lists_the_paths_of_media_parts(tmp_path):
    request = Request([Message("system", [TextPart("s")]),
                       Message("user", [TextPart("q"), VideoPart(path="/v.mp4"), AudioPart(path="/a.wav"),
                                        AudioPart(array=np.zeros(4, np.float32), rate=8000),
                                        ImagePart(path="/i.png"), ImagePart(array=np.zeros((1, 1, 3)))])])
    assert media_files(request) == ["/v.mp4", "/a.wav", "/i.png"]
    assert media_files(_text("q")) == []


class _Plan:
    def __init__(self, key):
        self._key = key

    def key(self):
        return dict(self._key)


def test_the_plan_is_part_of_the_key_and_the_context_is_not_changed(tmp_path):
    caller = Caller(Journal(tmp_path), "responses", identity={"kind": "k"})
    context = {"repeat": 0}
    plain = caller.key(_text("q"), None, context)
    fps1 = caller.key(_text("q"), _Plan({"media": {"fps": 1}}), context)
    fps2 = caller.key(_text("q"), _Plan({"media": {"fps": 2}}), context)
    assert len({plain, fps1, fps2}) == 3 and context == {"repeat": 0}
    assert plain == request_key({"kind": "k"}, _text("q"), {"repeat": 0})
    assert fps1 == request_key({"kind": "k"}, _text("q"), {"repeat": 0, "media": {"fps": 1}})


async def test_what_a_call_journals_and_a_live_run_returns(tmp_path):
    journal = Journal(tmp_path)
    backend = Scripted(BackendSpec("s", "m"), [
        Response(text="yes", usage={"prompt_tokens": 10, "completion_tokens": 2}, cost=0.5, meta={"finish": "stop"})])
    caller = Caller(journal, "judges", backend)
    call = await caller.call(_text("q"), context={"step": 1}, log={"task": "t", "id": "s1"})
    assert (call.text, call.error, call.cost, call.usage, call.meta, call.cached) == (
        "yes", None, 0.5, {"prompt_tokens": 10, "completion_tokens": 2}, {"finish": "stop"}, False)
    entry = journal.get("judges", call.key)
    latency = entry.pop("latency_s")  # measured: a number, the call's as the live Call holds it
    assert isinstance(latency, float) and 0 <= latency < 60 and latency == round(call.latency_s, 6)
    assert entry == {"key": call.key, "task": "t", "id": "s1", "response": "yes", "error": None,
                     "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "cost": 0.5, "media": None,
                     "adaptations": [], "response_meta": {"finish": "stop"}, "priced": True}
    assert journal.all("responses") == {}  # the caller's own kind only
    assert caller.usage.as_dict() == {"calls": 1, "cached": 0, "prompt_tokens": 10, "completion_tokens": 2,
                                      "cost": 0.5}
    assert call.key == caller.key(_text("q"), None, {"step": 1}) and caller.answered(call.key)
    assert not caller.answered(caller.key(_text("other")))
    again = await caller.call(_text("q"), context={"step": 1})
    assert again.cached and again.text == "yes" and len(backend.seen) == 1
    assert caller.usage.as_dict()["cached"] == 1 and caller.usage.calls == 1


async def test_a_journaled_failure_is_sent_again_live_and_replayed_as_it_was(tmp_path):
    journal = Journal(tmp_path)
    backend = Scripted(BackendSpec("s", "m"), [Response(text="", error="HTTP 500"), Response(text="fine")])
    caller = Caller(journal, "responses", backend)
    failed = await caller.call(_text("q"))
    assert failed.error == "HTTP 500" and not caller.answered(failed.key)
    replay = Caller(journal, "responses", identity=backend.identity)
    replayed = await replay.call(_text("q"))
    assert (replayed.error, replayed.cached, replay.usage.cached) == ("HTTP 500", True, 1)
    retried = await caller.call(_text("q"))
    assert (retried.text, retried.cached, len(backend.seen)) == ("fine", False, 2) and caller.answered(failed.key)
    assert caller.usage.cached == 0
    with pytest.raises(NotInJournal):
        await replay.call(_text("never"))


async def test_usage_without_a_cost_is_priced_by_the_backends_prices(tmp_path):
    backend = Scripted(BackendSpec("s", "m"), [
        Response(text="a", usage={"prompt_tokens": 1000, "completion_tokens": 10}),
        Response(text="b", usage={"prompt_tokens": 1000, "completion_tokens": 10}, cost=9.0),
        Response(text="c")])
    backend.prices = Prices(0.001, 0.1, "test")
    caller = Caller(Journal(tmp_path), "responses", backend)
    priced = await caller.call(_text("1"))
    assert priced.cost == pytest.approx(1000 * 0.001 + 10 * 0.1)
    assert (await caller.call(_text("2"))).cost == 9.0  # a backend's own cost is kept
    assert (await caller.call(_text("3"))).cost == 0.0  # no usage: nothing to price
    assert caller.usage.cost == pytest.approx(11.0)


async def test_a_reached_spend_limit_sends_nothing_and_journals_nothing(tmp_path):
    journal = Journal(tmp_path)
    backend = Scripted(BackendSpec("s", "m"), [Response(text="a", cost=2.0), Response(text="b", cost=2.0)])
    caller = Caller(journal, "responses", backend)
    caller.spend = SpendLimit(2.0, [caller.usage])
    first = await caller.call(_text("1"))
    assert first.text == "a" and not first.not_attempted
    refused = await caller.call(_text("2"))
    assert refused.not_attempted and refused.error == "not attempted: --max-cost 2 USD reached (2.0000 USD spent)"
    assert len(backend.seen) == 1 and journal.get("responses", refused.key) is None
    assert (await caller.call(_text("1"))).cached  # an answered call costs nothing: still answered


async def test_an_open_breaker_sends_nothing_and_journals_nothing(tmp_path):
    journal = Journal(tmp_path)
    backend = Scripted(BackendSpec("s", "m"), [Response(text="a")])
    caller = Caller(journal, "responses", backend)
    assert (await caller.call(_text("1"))).text == "a"
    caller.breaker.stop("stopped by SIGTERM")
    refused = await caller.call(_text("2"))
    assert refused.not_attempted and refused.error == "not attempted: stopped by SIGTERM"
    assert journal.get("responses", refused.key) is None and len(backend.seen) == 1
    assert (await caller.call(_text("1"))).text == "a"  # the journal still answers


async def test_a_reply_is_returned_as_journaled_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdef0123456789")
    backend = Scripted(BackendSpec("s", "m"), [Response(text="the key is abcdef0123456789")])
    caller = Caller(Journal(tmp_path), "responses", backend)
    call = await caller.call(_text("q"))
    assert "abcdef0123456789" not in call.text and call.text.startswith("the key is ")


async def test_a_missing_or_empty_token_count_is_priced_as_none(tmp_path):
    usages = [{"completion_tokens": 10}, {"prompt_tokens": None, "completion_tokens": 10},
              {"prompt_tokens": 0, "completion_tokens": 10}, {"prompt_tokens": 1000},
              {"prompt_tokens": 1000, "completion_tokens": None}, {"prompt_tokens": 1000, "completion_tokens": 0}]
    backend = Scripted(BackendSpec("s", "m"), [Response(text=str(i), usage=u) for i, u in enumerate(usages)])
    backend.prices = Prices(0.001, 0.1, "test")
    caller = Caller(Journal(tmp_path), "responses", backend)
    costs = [(await caller.call(_text(str(i)))).cost for i in range(len(usages))]
    assert costs == [pytest.approx(1.0, rel=1e-9)] * 6  # 10 completion tokens, or 1000 prompt tokens


def test_a_labelled_video_part_is_the_same_key_as_before_labels_existed(tmp_path):
    clip = _clip(tmp_path)
    labelled = part_reference(VideoPart(path=clip))
    assert labelled[0] == "video" and labelled[2:] == [None]  # [kind, content, segment]: nothing added
    assert part_reference(VideoPart(path=clip, labelled=False))[2:] == [None, "unlabelled"]


def test_a_prompt_that_is_the_messages_text_leaves_the_key_as_it_was():
    ident = {"kind": "k", "name": "m"}
    asked = lambda **kw: Request([Message("user", [TextPart("Is it red?")])], **kw)
    plain = request_key(ident, asked())
    assert request_key(ident, asked(prompt="Is it red?")) == plain
    assert request_key(ident, asked(prompt="Q: Is it red?\nA:")) != plain


def test_the_key_does_not_depend_on_the_order_of_a_dict():
    one = request_key({"kind": "k", "name": "m"}, _text("q", generation={"temperature": 0, "max_tokens": 8}),
                      {"repeat": 0, "step": 1})
    two = request_key({"name": "m", "kind": "k"}, _text("q", generation={"max_tokens": 8, "temperature": 0}),
                      {"step": 1, "repeat": 0})
    assert one == two


class OneTurn(Scripted):
    capabilities = Capabilities(multi_turn=False)


async def test_a_flattened_conversation_leaves_the_callers_request_as_it_was(tmp_path):
    # a backend without multi-turn gets the conversation flattened, on the caller's own copy of the request
    backend = OneTurn(BackendSpec("s", "m"), [Response(text="ok")])
    caller = Caller(Journal(tmp_path), "responses", backend)
    history = Request([Message("user", [TextPart("first")]), Message("assistant", [TextPart("one")]),
                       Message("user", [TextPart("second")])])
    call = await caller.call(history)
    assert call.text == "ok" and call.adaptations  # the flattening is said
    assert [m.role for m in history.messages] == ["user", "assistant", "user"] and history.adaptations == []
    assert backend.seen[0] is not history
    assert backend.seen[0].messages == []  # the decoded copy is not kept past its call


async def test_a_plain_call_leaves_its_request_as_it_was(tmp_path):
    backend = Scripted(BackendSpec("s", "m"), [Response(text="ok")])
    request = _text("q")
    assert (await Caller(Journal(tmp_path), "responses", backend).call(request)).text == "ok"
    assert backend.seen[0] is request and [m.text for m in request.messages] == ["q"]  # sent as it is, kept
