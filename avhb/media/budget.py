"""Check that a request's frames fit the model's context window.

An over-budget request fails its sample (``SampleError``: the run goes on);
only a bad policy name is a ``UserError``."""
from __future__ import annotations

from typing import Literal

from avhb.errors import SampleError, UserError


def check_budget(task: str, n_frames: int, tokens_per_frame: int, text_tokens: int,
                 max_context: int, policy: Literal["clamp", "refuse"] = "clamp",
                 reserve_tokens: int = 0) -> int:
    """The number of frames allowed.

    Frames fit when ``n_frames * tokens_per_frame + text_tokens +
    reserve_tokens <= max_context`` (``reserve_tokens``: room kept for the
    answer).  If they fit, ``n_frames`` is returned.  Otherwise the most that
    fit is ``floor((max_context - text_tokens - reserve_tokens) /
    tokens_per_frame)``: ``policy="clamp"`` returns it (if at least 1),
    ``policy="refuse"`` raises ``SampleError`` naming the task and the numbers,
    as does clamping to zero frames.
    """
    if policy not in ("clamp", "refuse"):
        raise UserError(f"task {task}: budget policy must be 'clamp' or 'refuse', got {policy!r}")
    for name, value in (("frames", n_frames), ("tokens per frame", tokens_per_frame),
                        ("text tokens", text_tokens), ("reserved tokens", reserve_tokens)):
        if value < 0:
            raise UserError(f"task {task}: {name} must not be negative, got {value}")
    if max_context <= 0:
        raise UserError(f"task {task}: max context must be positive, got {max_context}")
    need = n_frames * tokens_per_frame + text_tokens + reserve_tokens
    if need <= max_context:
        return n_frames
    room = max_context - text_tokens - reserve_tokens
    fit = max(0, room // tokens_per_frame) if tokens_per_frame > 0 else n_frames
    detail = (f"{n_frames} frames x {tokens_per_frame} tokens + {text_tokens} text tokens"
              + (f" + {reserve_tokens} reserved" if reserve_tokens else "")
              + f" = {need} > max context {max_context}")
    if policy == "refuse":
        raise SampleError(f"task {task}: {detail}; at most {fit} frames fit "
                          "(lower the frame count or use budget: clamp)")
    if fit < 1:
        raise SampleError(f"task {task}: {detail}; not even one frame fits")
    return fit
