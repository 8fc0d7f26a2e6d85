"""lmms-eval's task conventions: what its hooks return, as avhb's typed
message parts.

* ``lmms_eval_specific_kwargs`` (:func:`resolve_kwargs`): the entry named
  after the model, else the mapping with its ``default`` entry's keys merged
  in (else its ``dataset`` entry's), as lmms-eval resolves it; the model's
  name is avhb's backend kind (``openai``, ``vllm``, ``litellm``...), which
  is lmms-eval's ``--model`` name for its OpenAI-compatible and vLLM models.
* ``doc_to_visual(doc)`` (or ``doc_to_visual(doc, lmms_eval_specific_kwargs)``
  when it takes two parameters and the task has those kwargs), or a field
  name (its value, in a list), gives a list of visuals (:func:`visual_part`):
  a PIL image (its RGB pixels), a path (by extension: an image, audio, else
  a video), audio as ``{"array", "sampling_rate"}`` (a waveform, as
  ``datasets`` decodes it) or a decoder with ``get_all_samples()`` (datasets
  4's), a mapping ``{"type": "image"|"video"|"audio", "url"|"path": ...,
  "video_start", "video_end"}`` (lmms-eval's chat form); a relative path
  resolves under the data root.  A video's sampled frames go as images
  without avhb's time labels, as lmms-eval's OpenAI model sends them.
* ``doc_to_messages`` in lmms-eval's chat form (:func:`chat_messages`):
  ``[{"role", "content": [{"type": "text", "text"}, {"type": "image" |
  "video" | "audio", "url": ...}]}]``.
"""
from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, Callable

from avhb.errors import SampleError
from avhb.model.messages import AudioPart, ImagePart, Message, TextPart, VideoPart

IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tiff", ".webp"}
AUDIO_EXTS = {".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus"}


def resolve_kwargs(kwargs: Any, model_name: str | None) -> dict[str, Any] | None:
    """lmms-eval's resolution of ``lmms_eval_specific_kwargs`` (module docstring)."""
    if kwargs is None:
        return None
    kwargs = dict(kwargs)
    if model_name and model_name in kwargs:
        return dict(kwargs[model_name] or {})
    for key in ("default", "dataset"):
        if key in kwargs:
            kwargs.update(kwargs.get(key) or {})
            return kwargs
    return kwargs


def takes_two(fn: Callable) -> bool:
    try:
        return len(inspect.signature(fn).parameters) == 2
    except (TypeError, ValueError):
        return False


def takes_kwargs(fn: Callable) -> bool:
    """Whether a doc_to_messages hook takes lmms-eval's kwargs (a parameter
    of that name, ``**kwargs``) rather than avhb's ``(doc, ctx)``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "lmms_eval_specific_kwargs" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()) \
        or len(params) == 1


def _path(value: Any, root: Path) -> str:
    text = os.path.expanduser(str(value))
    return text if os.path.isabs(text) else str(Path(root) / text)


def visual_part(visual: Any, root: Path, sample: str) -> Any:
    """One visual as a message part (module docstring)."""
    if isinstance(visual, (ImagePart, VideoPart, AudioPart)):
        return visual
    if hasattr(visual, "convert") and hasattr(visual, "size"):  # a PIL image: sent as PNG, as both peers send it
        import numpy as np

        return ImagePart(array=np.asarray(visual.convert("RGB")), encoding="png")
    if isinstance(visual, (str, Path)):
        ext = os.path.splitext(str(visual))[1].lower()
        path = _path(visual, root)
        if ext in IMAGE_EXTS:
            return ImagePart(path=path)
        if ext in AUDIO_EXTS:
            return AudioPart(path=path)
        return VideoPart(path=path, labelled=False)
    if hasattr(visual, "get_all_samples"):  # datasets 4's audio decoder
        samples = visual.get_all_samples()
        import numpy as np

        wave = np.asarray(samples.data, dtype="float32")
        return AudioPart(array=wave.mean(axis=0) if wave.ndim == 2 else wave, rate=int(samples.sample_rate))
    if isinstance(getattr(visual, "path", None), str) and hasattr(visual, "metadata"):  # a video column's value
        return VideoPart(path=_path(visual.path, root), labelled=False)
    if isinstance(visual, dict):
        if "array" in visual and "sampling_rate" in visual:
            import numpy as np

            wave = np.asarray(visual["array"], dtype="float32")
            return AudioPart(array=wave.mean(axis=-1) if wave.ndim == 2 else wave, rate=int(visual["sampling_rate"]))
        kind = visual.get("type", "video")
        url = visual.get("url") or visual.get("path") or visual.get(kind)
        if kind == "image":
            return visual_part(url, root, sample) if not isinstance(url, (str, Path)) else ImagePart(path=_path(url, root))
        if kind == "audio":
            return visual_part(url, root, sample) if isinstance(url, dict) else AudioPart(path=_path(url, root))
        if kind == "video" and url is not None:
            start, end = visual.get("video_start", visual.get("start_time")), visual.get("video_end", visual.get("end_time"))
            segment = (float(start or 0.0), float(end)) if end is not None else None
            return VideoPart(path=_path(url, root), segment=segment, labelled=False)
    raise SampleError(f"sample {sample}: doc_to_visual gave {type(visual).__name__} {str(visual)[:60]!r}, not an "
                      "image, a video or audio path, or audio {array, sampling_rate}")


def visual_parts(visuals: Any, root: Path, sample: str) -> list[Any]:
    if visuals is None:
        return []
    items = visuals if isinstance(visuals, (list, tuple)) else [visuals]
    out: list[Any] = []
    for v in items:
        if isinstance(v, (list, tuple)):  # lmms-eval flattens one level
            out.extend(visual_part(x, root, sample) for x in v if x is not None)
        elif v is not None:
            out.append(visual_part(v, root, sample))
    return out


def chat_messages(messages: Any, root: Path, sample: str) -> list[Message]:
    """lmms-eval's chat messages (module docstring) as avhb's."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
            raise SampleError(f"sample {sample}: doc_to_messages gave {str(m)[:80]!r}, not a message "
                              "{role, content}")
        content = m.get("content")
        if isinstance(content, str):
            out.append(Message(m["role"], [TextPart(content)]))
            continue
        parts: list[Any] = []
        for c in content or []:
            if isinstance(c, dict) and c.get("type") == "text":
                parts.append(TextPart(str(c.get("text", ""))))
            else:
                parts.append(visual_part(c, root, sample))
        out.append(Message(m["role"], parts))
    return out
