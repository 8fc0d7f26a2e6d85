"""Nothing changed silently: what a run does differently from what its
flags and tasks ask, said once at the start and kept in ``run.json``
``notes``.

At plan time, from each task's media settings, its first sample's request
(built from references only: nothing is decoded) and the backend's
capabilities:

* video or images a backend cannot see ("vidpair_binary: video not sent to
  local — the backend sees no pixels; scores reflect text only");
* audio that reaches the model as a transcript (which ASR model, which
  language);
* ``--gen-kwargs`` keys the backend drops;
* ``--ablate`` switches that change nothing for a task;
* ``--samples`` ids that match no sample (an error when none matches);
* lm-eval's generation defaults filled in for the settings a task leaves
  out (temperature 0, max_gen_toks 256, until the fewshot delimiter); keys avhb accepts but
  does not act on (``should_decontaminate``), per task
  (:func:`task_key_notes`).

Multi-step tasks (drivers) build their requests while they run: for them,
and for samples unlike the first, :func:`adaptation_notes` says each new
kind of adaptation the samples' logs show once the task's generation ends.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from avhb.errors import SampleError, UserError
from avhb.model.messages import AudioPart, ImagePart, VideoPart

WHAT = {"no_video": "video or images", "no_audio": "audio", "audio_as_transcript": "audio",
        "no_boxes": "boxes", "text_only": "media"}


def media_of(request: Any) -> dict[str, bool]:
    parts = [p for m in request.messages for p in m.parts]
    videos = [p for p in parts if isinstance(p, VideoPart)]
    return {"video": bool(videos), "images": any(isinstance(p, ImagePart) for p in parts),
            "audio": any(isinstance(p, AudioPart) for p in parts), "boxes": any(v.boxes for v in videos)}


def media_of_spec(spec: Any) -> dict[str, bool]:
    return {"video": bool(spec.video), "images": bool(spec.images),
            "audio": bool(spec.audio) or bool(spec.audio_in_video and spec.video), "boxes": bool(spec.boxes)}


def literal_notes(task: Any, record: Any) -> list[str]:
    """A ``doc_to_target`` or ``doc_to_choice`` written as a bare name that is
    no column of the task's data: read as the literal text, as lm-eval
    reads it (a typo in a field name would score every sample against it)."""
    from avhb.errors import SampleError
    from avhb.run.task_prompts import _NO_FIELD
    from avhb.taskdef.templates import is_field_name

    doc = getattr(record, "doc", None)
    if not isinstance(doc, dict):
        return []
    out = []
    for key in ("doc_to_target", "doc_to_choice"):
        value = task.cfg.get(key)
        if not is_field_name(value):
            continue
        try:
            literal = task._field(value, doc) is _NO_FIELD
        except SampleError:  # a column this sample lacks: the sample fails, the text is no literal
            continue
        if literal:
            out.append(f"{task.name}: {key} {value!r} names no column of its data (fields: "
                       f"{', '.join(sorted(map(str, doc)))[:120]}): read as the literal text, as lm-eval reads it")
    return out


def task_key_notes(tasks: Iterable[Any]) -> list[str]:
    """What a task's lm-eval keys ask that avhb does not do."""
    from avhb.run.task import lm_generation

    out = []
    for t in tasks:
        added = lm_generation(t.cfg, t.lmms_conventions)[1]
        if added:
            whose = "lmms-eval's OpenAI model's" if t.lmms_conventions else "lm-eval's"
            out.append(f"{t.name}: generation settings the task leaves out are {whose} defaults: {', '.join(added)} "
                       "(set them in generation_kwargs; null leaves one to the backend, until: [] is no stop "
                       "sequence)")
        if t.lmms_conventions and not t.cfg.get("allow_outside_root"):
            out.append(f"{t.name}: lmms-eval conventions (doc_to_visual / lmms_eval_specific_kwargs): media paths its "
                       "hooks name are used as named, not confined to the data root")
        if t.cfg.get("should_decontaminate"):
            out.append(f"{t.name}: should_decontaminate: accepted and ignored (avhb runs no decontamination "
                       "against training data)")
    return out


def first_request_media(task: Any, record: Any, root: Any, spec: Any) -> dict[str, bool] | None:
    """The media the task's first sample (``record``) sends (None for a
    driver task, whose requests exist only while it runs)."""
    from avhb.taskdef.requests import build_request

    if task.cfg.get("driver"):
        return None
    if record is not None:
        try:
            return media_of(build_request(task, record.doc, root, record.id, spec))
        except (SampleError, UserError):
            return media_of_spec(spec)
        except Exception:  # a hook that fails here fails its sample later; the notes fall back to the YAML
            return media_of_spec(spec)
    return media_of_spec(spec)


def plan_notes(task: str, media: dict[str, bool] | None, spec: Any, ablations: Iterable[str], caps: Any,
               label: str, transcribes: str | None) -> list[str]:
    """The notes for one task (module docstring).  ``media``: what its
    requests carry (None: unknown until it runs)."""
    ab = set(ablations)
    notes: list[str] = []
    if media is None:
        return notes
    sees = media["video"] or media["images"]
    if sees and not ab & {"no_video", "text_only"} and caps is not None:
        what = "video" if media["video"] else "images"
        if not caps.sees_pixels:
            notes.append(f"{task}: {what} not sent to {label} — the backend sees no pixels; scores reflect text only")
        elif media["images"] and not caps.takes_images:
            notes.append(f"{task}: images not sent to {label} — the backend takes no images")
    if media["audio"] and not ab & {"no_audio", "text_only"} and caps is not None:
        if "audio_as_transcript" in ab or not caps.audio:
            why = "--ablate audio_as_transcript" if "audio_as_transcript" in ab else f"{label} takes no audio"
            notes.append(f"{task}: audio sent as a transcript ({why}; transcriber {spec.transcriber!r}, "
                         f"{_language(spec, repr(spec.transcriber))})")
        elif transcribes:
            notes.append(f"{task}: audio sent to {label} as a transcript ({transcribes}, {_language(spec, transcribes)}): "
                         "the text model hears no audio")
    for switch in sorted(ab):
        if switch == "no_video":
            idle = not sees
        elif switch in ("no_audio", "audio_as_transcript"):
            idle = not media["audio"]
        elif switch == "no_boxes":
            idle = not media["boxes"]
        elif switch == "text_only":
            idle = not (sees or media["audio"])
        else:
            continue
        if idle:
            notes.append(f"--ablate {switch} changes nothing for {task}: it sends no {WHAT[switch]}")
    return notes


def _language(spec: Any, transcriber: str) -> str:
    """The transcript's language as the note says it; ``transcriber``: the
    speech-to-text actually used (a registered one, or the backend's own)."""
    lang = getattr(spec, "asr_language", None)
    if not lang:
        return f"language detected by {transcriber}"
    if "{" in lang:
        return f"language from each sample ({lang.strip('{} ')})"
    return f"language {lang}"


def gen_kwargs_notes(gen_kwargs: dict[str, Any], backend: Any) -> list[str]:
    """``--gen-kwargs`` keys a backend that declares ``generation_keys`` drops."""
    keys = getattr(backend, "generation_keys", None)
    if keys is None:
        return []
    dropped = [k for k in gen_kwargs if k not in keys]
    if not dropped:
        return []
    label = backend.spec.label
    return [f"--gen-kwargs {', '.join(dropped)}: dropped by {label} (it reads only {', '.join(sorted(keys))})"]


def samples_notes(wanted: list[str] | None, matched: dict[str, set[str]]) -> list[str]:
    """``--samples`` ids no task has: a note; none matching at all: a
    ``UserError`` (the run would evaluate nothing)."""
    if not wanted:
        return []
    found = set().union(*matched.values()) if matched else set()
    unknown = [s for s in wanted if s not in found]
    if unknown and len(unknown) == len(wanted):
        raise UserError(f"--samples {','.join(wanted)[:200]}: no task of this run has a sample with any of these ids")
    if unknown:
        return [f"--samples {', '.join(unknown)[:200]}: no task of this run has these ids"]
    return []


_NUMBER = re.compile(r"\d+(\.\d+)?")
_EXPECTED = ("boxes drawn on frames",)  # what the task asked for, not a change


def adaptation_kind(text: str) -> str:
    """What kind of change an adaptation line is (``video not sent``,
    ``audio -> transcript``, ``frames clamped # -> # ...``)."""
    head = re.split(r"[:(]", text, maxsplit=1)[0].strip()
    return _NUMBER.sub("#", head)


def adaptation_notes(task: str, records: list[Any], said: set[str], label: str) -> list[str]:
    """Each kind of adaptation the task's samples logged that no note said
    yet (``said`` holds the kinds already said; updated)."""
    counts: dict[str, list[Any]] = {}
    for r in records:
        for text in dict.fromkeys(r.meta.get("adaptations") or []):
            if text in _EXPECTED:
                continue
            counts.setdefault(adaptation_kind(text), [text, 0])[1] += 1
    out = []
    for kind, (example, n) in counts.items():
        key = f"{task}|{kind}"
        if key in said:
            continue
        said.add(key)
        if kind.startswith(("video not sent", "image not sent")):
            what = "video" if kind.startswith("video") else "images"
            out.append(f"{task}: {what} not sent to {label} — the backend sees no pixels; scores reflect text only "
                       f"({n} of {len(records)} samples)")
        else:
            out.append(f"{task}: {example} ({n} of {len(records)} samples)")
    return out


def judge_adaptation_notes(adaptations: Any, said: set[str]) -> list[str]:
    """Each kind of change a judge's backend made to its requests
    (``TaskJudges.adaptations``: (judge, line) -> calls; a reasoning model
    that takes no temperature...), once per run and judge (``said``:
    updated)."""
    kinds: dict[tuple[str, str], list[Any]] = {}
    for (judge, text), n in adaptations.items():
        kinds.setdefault((judge, adaptation_kind(text)), [text, 0])[1] += n
    out = []
    for (judge, kind), (example, n) in kinds.items():
        key = f"judge|{judge}|{kind}"
        if key not in said:
            said.add(key)
            out.append(f"judge {judge}: {example} ({n} calls)")
    return out


def said_kinds(task: str, notes: list[str]) -> set[str]:
    """The adaptation kinds the plan-time notes of a task already cover."""
    out = set()
    for note in notes:
        if note.startswith(f"{task}: video not sent") or note.startswith(f"{task}: images not sent"):
            out |= {f"{task}|video not sent", f"{task}|image not sent"}
        if note.startswith(f"{task}: audio sent"):
            out |= {f"{task}|audio -> transcript"}
    return out
