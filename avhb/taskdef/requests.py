"""From a sample to the request its task asks: typed parts with media
*references* (paths, segments, box annotations), cheap to build.  Decoding
happens later, inside the model call (:mod:`avhb.media.materialize`).

``build_request`` reads the task's media settings (its YAML ``media``
block merged with ``--media``, parsed once per task into a ``MediaSpec``):
``video``/``audio`` name the files (templates), ``images`` a field holding
a list of image paths (or one template),
``audio_in_video`` adds the video's own track, ``segment`` clips both,
``boxes`` attaches the sample's box annotations to the video.

Media paths are confined to the data root: a path that leaves it (``..``
components, an absolute path elsewhere) fails its sample, whether a
template or a ``doc_to_messages`` hook named it, unless the task sets
``allow_outside_root: true``.  The check is lexical (symbolic links inside
the root, as in a Hub snapshot, are the data owner's and are followed).
Media a pack builds itself (a stitched grid, a rendered page) is written
under ``avhb.paths.built_media_dir()`` and accepted there: confinement is
for paths named by the data, and that folder holds only what avhb and pack
code made from the data (naming a file there reaches nothing else).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from avhb.errors import SampleError
from avhb.paths import built_media_dir
from avhb.media.spec import MediaSpec
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart
from avhb.taskdef.prompt import OWN, Turn, as_chat, as_text, join, qa_turns
from avhb.taskdef.prompt_source import PromptSource
from avhb.taskdef.templates import is_template, lookup, render


def media_path(template: str, doc: dict[str, Any], root: Path, sample: str | None = None,
               where: str = "media") -> str:
    """A media file named by a template, relative to the data root unless
    absolute."""
    path = Path(render(template, doc, sample, where))
    return str(path if path.is_absolute() else Path(root) / path)


def outside_root(path: str, root: Path) -> bool:
    """Whether ``path`` (absolute, or relative to ``root``) lies outside
    ``root``, comparing normalised paths (no symlink is resolved)."""
    base = os.path.normpath(os.path.abspath(root))
    full = os.path.normpath(os.path.abspath(os.path.join(base, path)))
    return os.path.commonpath([base, full]) != base


def check_confined(messages: list[Message], root: Path, task: str) -> None:
    """``SampleError`` for the first media part outside the data root
    (media built by a pack, under ``built_media_dir()``, is accepted)."""
    for m in messages:
        for part in getattr(m, "parts", None) or []:
            path = getattr(part, "path", None)
            if isinstance(part, (VideoPart, AudioPart, ImagePart)) and path and outside_root(str(path), root) \
                    and outside_root(str(path), built_media_dir()):
                raise SampleError(f"media path {str(path)!r} is outside the data root {root} (task {task}: set "
                                  "allow_outside_root: true in its YAML to allow it)")


def segment_of(doc: dict[str, Any], fields: tuple[str, str] | None) -> tuple[tuple[float, float] | None, str | None]:
    """``(segment, note)``: the clip ``[start, end]`` read from two fields,
    used only when both are numbers and end > start; otherwise no segment
    (the whole video) and a note for the sample log saying why."""
    if not fields:
        return None, None
    try:
        start, end = (lookup(doc, f) for f in fields)
        if start is not None and end is not None and float(end) > float(start):
            return (float(start), float(end)), None
        return None, f"segment not used (start={start!r}, end={end!r}): whole video"
    except (SampleError, TypeError, ValueError) as exc:
        return None, f"segment not used ({exc}): whole video"


def _image_paths(template: str, doc: dict[str, Any], root: Path, sample: str | None = None) -> list[str]:
    if is_template(template):
        return [media_path(template, doc, root, sample, "media.images")]
    value = lookup(doc, template, sample)
    values = value if isinstance(value, list) else [value]
    return [str(v if Path(str(v)).is_absolute() else Path(root) / str(v)) for v in values if v]


def speech_language(media: MediaSpec, doc: dict[str, Any], sample: str) -> str | None:
    """The Whisper language of the sample's speech (``media.asr_language``,
    a code, a locale or a template such as ``{{locale}}``), or None."""
    if not media.asr_language:
        return None
    if not is_template(media.asr_language):
        return media.asr_language
    from avhb.errors import UserError
    from avhb.media.spec import whisper_language

    value = render(media.asr_language, doc, sample, "media.asr_language").strip()
    try:
        return whisper_language(value, "media") if value else None
    except UserError as exc:
        raise SampleError(f"sample {sample}: {exc}") from None


def media_parts(task: PromptSource, doc: dict[str, Any], root: Path, sample_id: str, media: MediaSpec,
                notes: list[str] | None = None) -> list[Any]:
    """The media parts a doc sends (its video, images, audio), from the
    task's media block; notes for the sample log go to ``notes``."""
    parts: list[Any] = task.visuals(doc, root, sample_id) if task.cfg.get("doc_to_visual") is not None else []
    if task.cfg.get("doc_to_image") is not None or task.cfg.get("doc_to_audio") is not None:
        parts += task.lm_eval_media(doc, root, sample_id)
    language = speech_language(media, doc, sample_id)
    segment, note = segment_of(doc, media.segment)
    if note and notes is not None:
        notes.append(note)
    video_path = None
    if media.video:
        video_path = media_path(media.video, doc, root, sample_id, "media.video")
        boxes = doc.get(media.boxes) if media.boxes else None
        parts.append(VideoPart(path=video_path, segment=segment, boxes=boxes or None))
    if media.images:
        parts.extend(ImagePart(path=p) for p in _image_paths(media.images, doc, root, sample_id))
    if media.audio:
        parts.append(AudioPart(path=media_path(media.audio, doc, root, sample_id, "media.audio"), segment=segment,
                               language=language))
    elif media.audio_in_video and video_path:
        parts.append(AudioPart(path=video_path, segment=segment, language=language))
    return parts


def context_turns(task: PromptSource, doc: dict[str, Any], root: Path, sample_id: str, media: MediaSpec,
                  examples: Sequence[dict[str, Any]] = (), notes: list[str] | None = None,
                  system_instruction: str | None = None, question: str | None = None) -> list[Turn]:
    """The sample's turns as lm-eval builds them (:mod:`avhb.taskdef.prompt`):
    system (``system_prompt``, then ``description``), each few-shot example
    with its own media and answer (after the few-shot ``gen_prefix``), then
    the sample itself with its media (and the task's ``gen_prefix`` as the
    assistant's turn).  ``question``: the sample's text when the caller
    chose it (partial evaluation: one context per choice).  Under partial
    evaluation an example's question is its right context."""
    fs = task.fewshot
    cfg = task.cfg
    delimiter = cfg.get("fewshot_delimiter", "\n\n")
    system = join(join(system_instruction, cfg.get("system_prompt"), delimiter),
                  task.description(doc, sample_id), delimiter)
    turns = [Turn("system", system)] if system else []
    choice_spec = fs.overrides.get("doc_to_choice", cfg.get("doc_to_choice")) if examples else None
    for i, example in enumerate(examples):
        where = f"{sample_id} (few-shot example {i})"
        index = task.partial_index(example, where)
        if index is not None:  # lm-eval's multiple_input: the right context is the question
            contexts = task.choices(example, where, choice_spec) or []
            if not 0 <= index < len(contexts):
                raise SampleError(f"sample {where}: doc_to_text index {index} is not one of the {len(contexts)} "
                                  "contexts")
            example_question, answer = contexts[index], task.target(example, where, fs.overrides.get(
                "doc_to_target", OWN), None)
        else:
            example_question = task.text(example, where, fs.overrides.get("doc_to_text", OWN))
            answer = task.target(example, where, fs.overrides.get("doc_to_target", OWN), choice_spec)
        turns += qa_turns(example_question, answer, None, fs.target_delimiter, fs.fewshot_delimiter,
                          media_parts(task, example, root, where, media),
                          task.gen_prefix(example, where, fs.overrides.get("gen_prefix", OWN)))
    text = task.text(doc, sample_id) if question is None else question
    turns += qa_turns(text, None, None, cfg.get("target_delimiter", " ") if question is None else "", "",
                      media_parts(task, doc, root, sample_id, media, notes), task.gen_prefix(doc, sample_id))
    return turns


LOGLIKELIHOOD_TYPES = ("multiple_choice", "loglikelihood", "loglikelihood_rolling")


def build_request(task: PromptSource, doc: dict[str, Any], root: Path, sample_id: str, media: MediaSpec,
                  examples: Sequence[dict[str, Any]] = (), multiturn: bool = True) -> Request:
    """The request for one sample (module docstring): its turns
    (:func:`context_turns`) as chat messages, few-shot examples as turns of
    their own (``multiturn``, lm-eval's ``--fewshot_as_multiturn``) or in one
    user message.  A task with a ``doc_to_messages`` hook builds its own
    messages."""
    cfg = task.cfg
    hook = cfg.get("doc_to_messages")
    notes: list[str] = []
    prompt = None
    lmms = task.lmms_conventions
    if hook:
        messages = task.messages(doc, {"root": root, "media": media, "sample": sample_id})
    else:
        index = task.partial_index(doc, sample_id) if task.output_type == "multiple_choice" else None
        if index is not None:  # lm-eval's partial evaluation: each choice is a context, the target follows it
            contexts = [context_turns(task, doc, root, sample_id, media, examples, notes, question=c)
                        for c in task.choices(doc, sample_id) or []]
            return loglikelihood_request(task, doc, sample_id, contexts[0] if contexts else [], contexts)
        turns = context_turns(task, doc, root, sample_id, media, examples, notes)
        if task.output_type in LOGLIKELIHOOD_TYPES:
            return loglikelihood_request(task, doc, sample_id, turns)
        prompt = as_text(turns)
        if lmms and not any(t.parts for t in turns):
            messages = [Message("user", [TextPart(prompt)])]  # lmms-eval: a text task's context in one user turn
        else:
            messages = as_chat(turns, multiturn)
    if not cfg.get("allow_outside_root", False) and not lmms:  # lmms hooks name their paths
        check_confined(messages, root, task.name)
    request = Request(messages=messages, generation=task.generation, choices=task.choices(doc, sample_id),
                      prompt=prompt)
    request.fields = {"task": task.name, "sample_id": sample_id}
    request.adaptations.extend(notes)
    return request


def loglikelihood_request(task: PromptSource, doc: dict[str, Any], sample_id: str, turns: list[Turn],
                          contexts: list[list[Turn]] | None = None) -> Request:
    """lm-eval's log-likelihood requests for one sample, over its plain-text
    context (:func:`avhb.taskdef.prompt.as_text`): ``multiple_choice`` scores
    ``target_delimiter + choice`` after the context for every choice (and
    each one after no context when the task asks for ``acc_mutual_info``);
    under partial evaluation (``contexts``: one set of turns per choice, the
    choices being the contexts) ``target_delimiter + target`` after each
    context; ``loglikelihood`` the target after the context,
    ``loglikelihood_rolling`` the target on its own, whole.  Text only: a
    sample with media fails."""
    if any(t.parts for t in turns):
        raise SampleError(f"sample {sample_id}: output_type {task.output_type} scores text continuations; this "
                          "sample sends media, which log-likelihood requests do not carry")
    context = as_text(turns)
    delimiter = task.cfg.get("target_delimiter", " ")
    rolling = task.output_type == "loglikelihood_rolling"
    if contexts is not None:
        target = task.target(doc, sample_id, OWN, None)
        if isinstance(target, list):
            target = target[0] if target else ""
        pairs = [(as_text(c), delimiter + str(target)) for c in contexts]
        context = pairs[0][0] if pairs else ""
    elif task.output_type == "multiple_choice":
        choices = task.choices(doc, sample_id)
        if not choices:
            raise SampleError(f"sample {sample_id}: output_type multiple_choice needs doc_to_choice")
        pairs = [(context, delimiter + c) for c in choices]
        names = {str(e.get("metric")) for e in task.cfg.get("metric_list") or [] if isinstance(e, dict)}
        if "acc_mutual_info" in names:  # the choices' log-likelihoods with no context (lmms-eval: no delimiter)
            pairs += [("", ("" if task.lmms_conventions else delimiter) + c) for c in choices]
    else:
        target = task.target(doc, sample_id)
        if isinstance(target, list):
            target = target[0] if target else ""
        pairs = [("", str(target))] if rolling else [(context, str(target))]
    shown = pairs[0][1] if rolling else context
    request = Request(messages=[Message("user", [TextPart(shown)])], generation={}, loglikelihood=pairs,
                      rolling=rolling, prompt=shown)
    request.fields = {"task": task.name, "sample_id": sample_id}
    return request
