"""Request building reads the task's media settings parsed once (YAML
merged with --media)."""
from __future__ import annotations

import pytest

from avhb.errors import SampleError
from avhb.registry import get_registry
from avhb.options import RunOptions, media_plan
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.requests import build_request
from avhb.run.task import Task


def _task(tmp_path, media, **extra):
    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "bench",
                     {"task": "t", "doc_to_text": "{{q}}", "media": media, **extra})
    return Task(cfg, get_registry())


def _options(tmp_path, **media):
    return RunOptions(tasks=["t"], model=None, output_dir=tmp_path, media=media)


def test_media_override_audio_in_video_adds_audio_the_yaml_lacks(tmp_path):
    task = _task(tmp_path, {"video": "{{v}}", "frames": 4})
    doc = {"q": "what?", "v": "clip.mp4"}
    plain = build_request(task, doc, tmp_path, "s", media_plan(task, _options(tmp_path)).spec)
    assert [p.type for p in plain.messages[0].parts] == ["video", "text"]
    plan = media_plan(task, _options(tmp_path, audio_in_video=True))
    req = build_request(task, doc, tmp_path, "s", plan.spec)
    assert [p.type for p in req.messages[0].parts] == ["video", "audio", "text"]
    assert req.messages[0].parts[1].path == str(tmp_path / "clip.mp4")
    assert plan.key() != media_plan(task, _options(tmp_path)).key()  # and the request key follows


def test_frames_override_replaces_the_yaml_fps(tmp_path):
    task = _task(tmp_path, {"video": "{{v}}", "fps": 1.0, "max_frames": 32})
    spec = media_plan(task, _options(tmp_path, frames=64, fps=None)).spec
    assert spec.frames == 64 and spec.fps is None and spec.max_frames == 32


def test_images_field_lists_image_parts(tmp_path):
    task = _task(tmp_path, {"images": "pages"}, allow_outside_root=True)  # /abs/p2.png is outside the data root
    req = build_request(task, {"q": "?", "pages": ["p1.png", "/abs/p2.png"]}, tmp_path, "s",
                        media_plan(task, _options(tmp_path)).spec)
    assert [(p.type, p.path) for p in req.messages[0].parts[:2]] == [("image", str(tmp_path / "p1.png")),
                                                                     ("image", "/abs/p2.png")]


def test_speech_language_comes_from_the_task_and_reaches_whisper(tmp_path, monkeypatch):
    """CURVE-style `asr_language: "{{locale}}"`: the audio part carries the
    sample's language, and the transcript path passes it to Whisper unless
    the backend was given its own `language=`."""
    import pytest

    from avhb.errors import SampleError
    from avhb.model.messages import AudioPart
    from avhb.model_backends import asr

    task = _task(tmp_path, {"video": "{{v}}", "audio_in_video": True, "asr_language": "{{locale}}"})
    spec = media_plan(task, _options(tmp_path)).spec
    req = build_request(task, {"q": "?", "v": "a.mp4", "locale": "ta-IN"}, tmp_path, "s1", spec)
    audio = [p for p in req.messages[0].parts if isinstance(p, AudioPart)]
    assert [a.language for a in audio] == ["ta"]
    fixed = media_plan(_task(tmp_path, {"audio": "{{a}}", "asr_language": "ko_KR"}), _options(tmp_path)).spec
    assert fixed.asr_language == "ko"
    with pytest.raises(SampleError, match="sample s2: .*not a language code"):
        build_request(task, {"q": "?", "v": "a.mp4", "locale": "??"}, tmp_path, "s2", spec)
    seen = []
    monkeypatch.setattr(asr, "transcribe", lambda *a, language=None, **k: seen.append(language))
    asr.transcribe_part(audio[0], "whisper-base")
    asr.transcribe_part(audio[0], "whisper-base", language="en")  # the backend's own setting wins
    assert seen == ["ta", "en"]


# ---------------------------------------------------------------- issue 15, defect 10: confined media paths


@pytest.mark.parametrize("path", ["../../outside/private.mp4", "/etc/private.mp4", "sub/../../x.mp4"])
def test_media_outside_the_data_root_fails_the_sample(tmp_path, path):
    root = tmp_path / "data"
    task = _task(tmp_path, {"video": "{{v}}"})
    with pytest.raises(SampleError, match="is outside the data root .* allow_outside_root: true"):
        build_request(task, {"q": "?", "v": path}, root, "s", media_plan(task, _options(tmp_path)).spec)


def test_media_inside_the_root_and_the_explicit_option(tmp_path):
    root = tmp_path / "data"
    task = _task(tmp_path, {"video": "{{v}}", "audio": "{{a}}"})
    spec = media_plan(task, _options(tmp_path)).spec
    req = build_request(task, {"q": "?", "v": "sub/../clip.mp4", "a": str(root / "a.wav")}, root, "s", spec)
    assert req.messages[0].parts[0].path == str(root / "sub/../clip.mp4")
    allowed = _task(tmp_path, {"video": "{{v}}"}, allow_outside_root=True)
    req = build_request(allowed, {"q": "?", "v": "../outside.mp4"}, root, "s", media_plan(allowed, _options(tmp_path)).spec)
    assert req.messages[0].parts[0].path == str(root / "../outside.mp4")


def test_hook_built_messages_are_confined_too(tmp_path, monkeypatch):
    from avhb.model.messages import Message, TextPart, VideoPart

    task = _task(tmp_path, {}, doc_to_messages={"function": "hooks.msgs"})
    monkeypatch.setattr(Task, "messages", lambda self, doc, ctx: [Message("user", [VideoPart(path="/secret.mp4"),
                                                                                    TextPart("?")])])
    with pytest.raises(SampleError, match="'/secret.mp4' is outside the data root"):
        build_request(task, {"q": "?"}, tmp_path / "data", "s", media_plan(task, _options(tmp_path)).spec)


def test_media_a_pack_built_is_accepted_outside_the_data_root(tmp_path, monkeypatch):
    """Media under ``built_media_dir()`` (a pack's stitched grid) is the
    pack's own, not a path the data named: accepted; a path next to it, or
    one that climbs out of it, is still refused."""
    from avhb.model.messages import ImagePart, Message, TextPart
    from avhb.paths import built_media_dir

    grid = built_media_dir() / "somepack" / "g.png"
    task = _task(tmp_path, {}, doc_to_messages={"function": "hooks.msgs"})
    for path, ok in ((grid, True), (built_media_dir().parent / "media" / "x.png", False),
                     (built_media_dir() / ".." / "x.png", False)):
        monkeypatch.setattr(Task, "messages", lambda self, doc, ctx, p=path: [
            Message("user", [ImagePart(path=str(p)), TextPart("?")])])
        if ok:
            req = build_request(task, {"q": "?"}, tmp_path / "data", "s", media_plan(task, _options(tmp_path)).spec)
            assert req.messages[0].parts[0].path == str(grid)
        else:
            with pytest.raises(SampleError, match="is outside the data root"):
                build_request(task, {"q": "?"}, tmp_path / "data", "s", media_plan(task, _options(tmp_path)).spec)


def test_a_copied_config_reads_its_own_settings(tmp_path):
    """``TaskConfig.get`` reads the instance's config, also on a deep copy
    whose config is then changed (no lookup bound to the original's dict)."""
    import copy

    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "bench", {"target_delimiter": " "})
    other = copy.deepcopy(cfg)
    other.config["target_delimiter"] = "\n"
    assert (cfg.get("target_delimiter"), other.get("target_delimiter"), other.get("missing", 3)) == (" ", "\n", 3)
