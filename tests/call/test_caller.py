"""The one model call: keys, journal hits, replay, and judges that see
media (an image part in the judge request, its key following the image, a
text-only judge refused before any call)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from PIL import Image

from avhb.errors import UserError
from avhb.media.materialize import MediaPlan
from avhb.media.spec import MediaSpec
from avhb.model.backend import Backend, BackendSpec, Capabilities
from avhb.call.caller import Caller, NotInJournal, request_key
from avhb.model.messages import ImagePart, Message, Request, Response, TextPart
from avhb.runfolder.journal import Journal
from avhb.score.judges import JudgeRole, Judges


class Recorder(Backend):
    capabilities = Capabilities(images=4, video=True, audio=True)

    def __init__(self, spec, caps=None):
        super().__init__(spec)
        self.seen: list[Request] = []
        if caps is not None:
            self.capabilities = caps

    async def generate(self, request):
        self.seen.append(copy.deepcopy(request))  # the caller frees decoded media after the call
        return Response(text="Yes", usage={"prompt_tokens": 3, "completion_tokens": 1})


def _png(path, color):
    Image.new("RGB", (80, 40), color).save(path)
    return str(path)


def _text(prompt):
    return Request([Message("user", [TextPart(prompt)])])


async def test_journal_hit_makes_no_call_and_replay_needs_no_backend(tmp_path):
    journal = Journal(tmp_path / "j")
    backend = Recorder(BackendSpec("rec", "m"))
    caller = Caller(journal, "responses", backend)
    first = await caller.call(_text("hello"), context={"repeat": 0})
    again = await caller.call(_text("hello"), context={"repeat": 0})
    other = await caller.call(_text("hello"), context={"repeat": 1})  # another repeat is another call
    assert (first.cached, again.cached, other.cached) == (False, True, False) and len(backend.seen) == 2
    assert first.key == again.key != other.key and caller.usage.calls == 2 and caller.usage.cached == 1
    journal.close()
    replay = Caller(Journal(tmp_path / "j"), "responses", identity=backend.identity)
    assert (await replay.call(_text("hello"), context={"repeat": 0})).text == "Yes"
    with pytest.raises(NotInJournal):
        await replay.call(_text("never asked"), context={"repeat": 0})


async def test_failed_call_is_retried_by_a_run_and_replayed_as_failure(tmp_path):
    class Flaky(Recorder):
        async def generate(self, request):
            self.seen.append(request)
            return Response(text="", error="HTTP 503") if len(self.seen) == 1 else Response(text="ok")

    journal = Journal(tmp_path)
    backend = Flaky(BackendSpec("flaky", "m"))
    caller = Caller(journal, "responses", backend)
    assert (await caller.call(_text("q"))).error == "HTTP 503"
    replay = Caller(journal, "responses", identity=backend.identity)
    assert (await replay.call(_text("q"))).error == "HTTP 503"  # avhb score sees the failure as it was
    assert (await caller.call(_text("q"))).text == "ok" and len(backend.seen) == 2  # a re-run retries it


def test_key_follows_image_content_not_decoding(tmp_path):
    img = _png(tmp_path / "a.png", (255, 0, 0))
    req = lambda: Request([Message("user", [TextPart("x"), ImagePart(path=img)])])
    k1 = request_key({"kind": "k"}, req())
    assert request_key({"kind": "k"}, req()) == k1
    _png(tmp_path / "a.png", (0, 0, 255))  # same path, other pixels
    assert request_key({"kind": "k"}, req()) != k1
    arr = np.zeros((4, 4, 3), np.uint8)
    a = request_key({}, Request([Message("user", [ImagePart(array=arr)])]))
    arr[0, 0, 0] = 1
    assert request_key({}, Request([Message("user", [ImagePart(array=arr)])])) != a


def test_video_and_audio_keys_follow_content_not_path(tmp_path):
    """Issue 23, item 1: a corrected clip under the same name, with its old
    size and mtime put back, is another call; the same bytes elsewhere are
    the same call."""
    import os

    from avhb.model.messages import AudioPart, VideoPart

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(bytes(range(256)) * 64)
    moved = tmp_path / "elsewhere" / "renamed.mp4"
    moved.parent.mkdir()
    moved.write_bytes(clip.read_bytes())

    def keys(path):
        video = Request([Message("user", [TextPart("what?"), VideoPart(path=str(path), segment=(1.0, 2.0))])])
        audio = Request([Message("user", [TextPart("what?"), AudioPart(path=str(path))])])
        return request_key({"kind": "k"}, video), request_key({"kind": "k"}, audio)

    before = keys(clip)
    assert keys(moved) == before and before[0] != before[1]
    st = os.stat(clip)
    data = bytearray(clip.read_bytes())
    data[5000] ^= 0xFF
    clip.write_bytes(bytes(data))
    os.utime(clip, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(clip).st_size == st.st_size and os.stat(clip).st_mtime_ns == st.st_mtime_ns
    after = keys(clip)
    assert after[0] != before[0] and after[1] != before[1]
    # a missing file still has a key (the call fails when the file is read), distinct from any content
    assert keys(tmp_path / "gone.mp4")[0] not in (before[0], after[0])


async def test_the_caller_fingerprints_each_media_file_once_off_the_loop(tmp_path, monkeypatch):
    import threading

    from avhb.media import fingerprints
    from avhb.model.messages import VideoPart

    monkeypatch.setattr(fingerprints, "RACY_SECONDS", 0.0)
    fingerprints.forget()
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"x" * 4096)
    loop_thread = threading.get_ident()
    hashed_in = []
    real = fingerprints._hash_file

    def spy(path):
        hashed_in.append(threading.get_ident())
        return real(path)

    monkeypatch.setattr(fingerprints, "_hash_file", spy)
    backend = Recorder(BackendSpec("rec", "m"))
    caller = Caller(Journal(tmp_path / "j"), "responses", backend)
    for i in range(3):
        await caller.call(Request([Message("user", [TextPart(f"q{i}"), VideoPart(path=str(clip))])]))
    assert len(hashed_in) == 1 and hashed_in[0] != loop_thread  # (not a real video: each call fails at decoding)
    fingerprints.forget()


ROLE = JudgeRole("seer", "Is {{thing}} shown?", parser="yes_no", media=("image",))


async def test_judge_request_carries_the_image_and_its_key_changes_with_it(tmp_path):
    img = _png(tmp_path / "unit2.png", (0, 200, 0))
    backend = Recorder(BackendSpec("rec", "judge"))
    journal = Journal(tmp_path / "j")
    pool = Judges({"*": [BackendSpec("rec", "judge")]}, journal, lambda s: backend)
    pool.prepare({"seer": ROLE})
    judges = pool.for_task("t", {"seer": ROLE}, MediaPlan(MediaSpec(max_side=40), (), "t"))
    v = await judges.ask("seer", {"thing": "green"}, media=[img])
    assert v.ok and v.value == "yes"
    sent = backend.seen[0].messages[-1].parts
    assert [p.type for p in sent] == ["text", "image"]
    assert sent[1].array.shape == (20, 40, 3) and tuple(sent[1].array[0, 0]) == (0, 200, 0)  # decoded, resized
    assert "green" in sent[0].text
    await judges.ask("seer", {"thing": "green"}, media=[img])
    assert len(backend.seen) == 1  # the same image: answered by the journal
    _png(tmp_path / "unit2.png", (200, 0, 0))
    await judges.ask("seer", {"thing": "green"}, media=[img])
    assert len(backend.seen) == 2  # the image changed, so did the key
    keys = [e["key"] for e in journal.all("judges").values()]
    assert len(set(keys)) == 2


def test_role_that_sends_images_refuses_a_text_only_judge_before_any_call(tmp_path):
    made = []

    def factory(spec):
        made.append(spec)
        return Recorder(spec, Capabilities(images=0, video=False, sees_pixels=False))

    pool = Judges({"*": [BackendSpec("blind", "j")]}, Journal(tmp_path), factory)
    with pytest.raises(UserError, match="judge role 'seer' sends image to its judge, but blind:j sees no images"):
        pool.prepare({"seer": ROLE})
    text_role = JudgeRole("scorer", "ok?", parser="yes_no")
    pool.prepare({"scorer": text_role})  # a text role is fine with it


async def test_multi_turn_is_flattened_for_a_backend_without_it(tmp_path):
    backend = Recorder(BackendSpec("rec", "m"), Capabilities(multi_turn=False))
    caller = Caller(Journal(tmp_path), "responses", backend)
    history = [Message("user", [TextPart("look")]), Message("assistant", [TextPart("seen")]),
               Message("user", [TextPart("answer?")])]
    call = await caller.call(Request(list(history)))
    assert [m.role for m in backend.seen[0].messages] == ["user"]
    assert [p.text for p in backend.seen[0].messages[0].parts] == ["User:", "look", "Assistant:", "seen", "User:", "answer?"]
    assert call.adaptations == ["conversation of 3 turns flattened into one message (the backend takes no multi-turn input)"]
    assert [m.role for m in history] == ["user", "assistant", "user"]  # the driver's history is untouched
