"""Modality switches (--ablate) change exactly the parts they name, for any
backend; capability adaptations are explicit and recorded."""
from __future__ import annotations


import numpy as np
import pytest

from avhb.model.backend import Capabilities
from avhb.model.messages import AudioPart, Message, Request, TextPart, VideoPart
from avhb.media.materialize import MediaPlan, materialize
from avhb.media.spec import MediaSpec
from avhb.options import parse_ablations
from tests.fixtures.make_test_media import make_video, tone_track

ALL = Capabilities(images=16, video=True, audio=True)
MEDIA = {"frames": 4, "audio_rate": 16000}
DOC = {"boxes": {"0": [{"x": 10, "y": 10, "width": 40, "height": 30, "labelId": "thing"}]}}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("abl") / "clip.mp4"
    make_video(str(path), seconds=2.0, fps=10, audio=tone_track(2.0, 16000, [(0.0, 2.0, 440.0)]))
    return str(path)


def request(clip):
    return Request(messages=[Message("system", [TextPart("sys")]),
                             Message("user", [VideoPart(path=clip, boxes=DOC["boxes"]), AudioPart(path=clip),
                                              TextPart("What happens?")])])


def kinds(req):
    return [[p.type for p in m.parts] for m in req.messages]


def run(clip, ablations, caps=ALL, media=MEDIA):
    req = request(clip)
    log = materialize(req, MediaPlan(MediaSpec.from_dict(media), tuple(ablations), "t"), caps)
    return req, log


def test_no_switch_keeps_everything_and_decodes(clip):
    req, log = run(clip, [])
    video, audio, text = req.messages[1].parts
    assert kinds(req) == [["text"], ["video", "audio", "text"]]
    assert len(video.frames) == 4 and log["video"]["frame_indices"] == video.frame_indices
    assert audio.array.dtype == np.float32 and abs(len(audio.array) - 32000) <= 1024  # AAC pads to whole 1024-sample frames
    assert req.adaptations == ["boxes drawn on frames"]


def test_no_audio_removes_only_audio(clip):
    req, _ = run(clip, ["no_audio"])
    assert kinds(req) == [["text"], ["video", "text"]]
    assert sorted(req.adaptations) == ["audio removed (--ablate no_audio)", "boxes drawn on frames"]


def test_no_video_removes_only_video(clip):
    req, log = run(clip, ["no_video"])
    assert kinds(req) == [["text"], ["audio", "text"]]
    assert log["video"] is None and req.adaptations == ["video removed (--ablate no_video)"]


def test_text_only_removes_all_media(clip):
    req, _ = run(clip, parse_ablations("text_only"))
    assert kinds(req) == [["text"], ["text"]]
    assert req.messages[1].parts[0].text == "What happens?"


def test_no_boxes_keeps_frames_clean(clip):
    boxed, _ = run(clip, [])
    clean, _ = run(clip, ["no_boxes"])
    assert "boxes drawn on frames" not in clean.adaptations
    a, b = boxed.messages[1].parts[0].frames[0], clean.messages[1].parts[0].frames[0]
    assert a.shape == b.shape and not np.array_equal(a, b)  # the box pixels differ


def test_audio_as_transcript_replaces_waveform(clip):
    req, _ = run(clip, ["audio_as_transcript"])
    audio = req.messages[1].parts[1]
    assert audio.array is None and isinstance(audio.transcript, str)
    assert any(a.startswith("audio -> transcript") for a in req.adaptations)
    # the file is gone too: a backend that hears gets the transcript, not the audio
    from avhb.model_backends.encode_messages import encode_messages

    assert audio.path is None
    content = encode_messages(req, audio=True)[1]["content"]
    assert [p["type"] for p in content if "Audio transcript" in p.get("text", "")] == ["text"]
    assert not any(p["type"] == "input_audio" for p in content)


def test_backend_without_pixels_gets_no_video_and_it_is_recorded(clip):
    req, log = run(clip, [], caps=Capabilities(images=0, video=False, audio=True, sees_pixels=False))
    assert kinds(req) == [["text"], ["audio", "text"]]
    assert req.adaptations == ["video not sent: the backend sees no pixels"]
    assert log["video"] == {"path": clip, "sent": False}


def test_frame_budget_clamps_and_records(clip):
    caps = Capabilities(images=16, video=True, audio=True, max_context=1000, tokens_per_frame=300)
    req, _ = run(clip, ["no_audio"], caps=caps, media={"frames": 8})
    assert len(req.messages[1].parts[0].frames) == 3
    assert "frames clamped 8 -> 3 to fit 1000 tokens" in req.adaptations


def test_unknown_switch_is_a_user_error():
    from avhb.errors import UserError

    with pytest.raises(UserError, match="unknown switch"):
        parse_ablations("no_audio,no_smell")


def _task(tmp_path, media):
    from avhb.registry import get_registry
    from avhb.run.task import Task
    from avhb.taskdef.config import TaskConfig

    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "bench", {"task": "t", "doc_to_text": "{{q}}", "media": media})
    return Task(cfg, get_registry())


@pytest.mark.parametrize("doc, segment, note", [
    ({"q": "?", "v": "a.mp4", "s": 1.0, "e": 2.5}, (1.0, 2.5), None),
    ({"q": "?", "v": "a.mp4", "s": 3.0, "e": 2.0}, None, "segment not used (start=3.0, end=2.0): whole video"),
    ({"q": "?", "v": "a.mp4", "s": None, "e": 2.0}, None, "segment not used (start=None, end=2.0): whole video"),
    ({"q": "?", "v": "a.mp4", "s": "x", "e": 2.0}, None, "segment not used (could not convert string to float: 'x'): whole video"),
])
def test_segment_is_used_only_when_valid_and_otherwise_recorded(tmp_path, doc, segment, note):
    from avhb.taskdef.requests import build_request

    task = _task(tmp_path, {"video": "{{v}}", "segment": ["s", "e"], "frames": 4})
    req = build_request(task, doc, tmp_path, "id1", MediaSpec.from_dict(task.cfg.get("media")))
    video = req.messages[0].parts[0]
    assert video.path == str(tmp_path / "a.mp4") and video.segment == segment
    assert req.adaptations == ([note] if note else [])
