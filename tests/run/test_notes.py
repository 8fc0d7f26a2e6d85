"""What a run says once at its start (avhb.run.notes), on hand-made cases."""
import pytest

from avhb.errors import UserError
from avhb.media.spec import MediaSpec
from avhb.model.backend import Backend, BackendSpec, Capabilities
from avhb.run.notes import adaptation_notes, gen_kwargs_notes, plan_notes, said_kinds, samples_notes
from avhb.score.metric import SampleRecord

TEXT_ONLY = Capabilities(images=0, video=False, audio=True, sees_pixels=False)
MEDIA = {"video": True, "images": False, "audio": True, "boxes": False}


def test_video_audio_and_idle_ablations_for_a_text_model():
    spec = MediaSpec.from_dict({"video": "{{v}}", "audio_in_video": True, "asr_language": "{{locale}}"})
    notes = plan_notes("curve_ta_IN", MEDIA, spec, ["no_boxes"], TEXT_ONLY, "local", "whisper-base")
    assert notes == [
        "curve_ta_IN: video not sent to local — the backend sees no pixels; scores reflect text only",
        "curve_ta_IN: audio sent to local as a transcript (whisper-base, language from each sample (locale)): "
        "the text model hears no audio",
        "--ablate no_boxes changes nothing for curve_ta_IN: it sends no boxes",
    ]
    # a backend that takes no audio gets the registered transcriber's text, in the task's language
    deaf = Capabilities(images=8, video=True, audio=False)
    spec = MediaSpec.from_dict({"audio": "{{a}}", "asr_language": "ta-IN"})
    assert plan_notes("t", {**MEDIA, "video": False}, spec, [], deaf, "openai:gpt", None) == [
        "t: audio sent as a transcript (openai:gpt takes no audio; transcriber 'whisper', language ta)"]
    # no language given: the note names the transcriber that detects it (a plugin's, not "Whisper")
    plugin = MediaSpec.from_dict({"audio": "{{a}}", "transcriber": "mytx"})
    assert plan_notes("t", {**MEDIA, "video": False}, plugin, [], deaf, "openai:gpt", None) == [
        "t: audio sent as a transcript (openai:gpt takes no audio; transcriber 'mytx', language detected by 'mytx')"]
    assert plan_notes("t", {**MEDIA, "video": False}, plugin, [], TEXT_ONLY, "local", "whisper-base") == [
        "t: audio sent to local as a transcript (whisper-base, language detected by whisper-base): "
        "the text model hears no audio"]
    # ablations that remove what is there say nothing; a driver task (media unknown) says nothing yet
    assert plan_notes("t", MEDIA, spec, ["no_video", "no_audio"], deaf, "x", None) == []
    assert plan_notes("t", None, spec, ["no_audio"], deaf, "x", None) == []


def test_dropped_gen_kwargs_and_unknown_samples():
    class Greedy(Backend):
        generation_keys = frozenset({"max_tokens", "stop"})

    b = Greedy(BackendSpec("local", ""))
    assert gen_kwargs_notes({"max_tokens": 8, "temperature": 0.7, "top_p": 0.9}, b) == [
        "--gen-kwargs temperature, top_p: dropped by local (it reads only max_tokens, stop)"]
    assert gen_kwargs_notes({"temperature": 0.7}, Backend(BackendSpec("openai", "m"))) == []
    assert samples_notes(["a", "zz"], {"t1": {"a"}, "t2": set()}) == ["--samples zz: no task of this run has these ids"]
    with pytest.raises(UserError, match="no task of this run has a sample with any of these ids"):
        samples_notes(["x", "y"], {"t1": set()})


def test_adaptations_seen_while_running_are_said_once_per_kind():
    recs = [SampleRecord(id=str(i), doc={}) for i in range(4)]
    recs[0].meta["adaptations"] = ["frames clamped 32 -> 16 to fit 8192 tokens", "boxes drawn on frames"]
    recs[1].meta["adaptations"] = ["frames clamped 32 -> 8 to fit 8192 tokens"]
    recs[2].meta["adaptations"] = ["video not sent: the backend sees no pixels"]
    said = said_kinds("t", ["t: video not sent to local — the backend sees no pixels; scores reflect text only"])
    notes = adaptation_notes("t", recs, said, "local")
    assert notes == ["t: frames clamped 32 -> 16 to fit 8192 tokens (2 of 4 samples)"]
    assert adaptation_notes("t", recs, said, "local") == []  # said once
