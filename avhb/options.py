"""What a run was asked to do: the parsed command line, as one dataclass."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from avhb.errors import UserError
from avhb.media.materialize import ABLATIONS
from avhb.media.spec import media_overrides, merged_media
from avhb.model.backend import BackendSpec

if TYPE_CHECKING:
    from avhb.model.backend import Backend
    from avhb.score.metric import Metric, SampleRecord


DEFAULT_SEED = 1234  # --seed (every seed; lm-eval's default too)
DEFAULT_MAX_ERRORS = "5%"  # --max-errors: the share of samples that may fail outside the model


class SampleSlice(Protocol):
    """The slice of every task's samples this process runs (``--shard I/N``:
    :class:`avhb.cluster.shard.Shard`, which cluster/ builds; run/ only
    asks it)."""

    @property
    def label(self) -> str: ...

    def to_json(self) -> dict[str, int]: ...

    def select(self, records: list[SampleRecord], metrics: Iterable[Metric], task: str = "") -> list[SampleRecord]: ...


class Executor(Protocol):
    """Where the run's backends run (``--executor``:
    :class:`avhb.cluster.executor.ExecutorSpec`; None: in this process)."""

    @property
    def label(self) -> str: ...

    def backend_factory(self) -> Callable[[BackendSpec], Backend]: ...


@dataclass
class RunOptions:
    tasks: list[str]
    model: BackendSpec | None
    output_dir: Path
    judges: dict[str, list[BackendSpec]] = field(default_factory=dict)
    judge_args: list[str] = field(default_factory=list)  # the --judge flags as given (kept for `avhb score`)
    data: dict[str, Path] = field(default_factory=dict)
    sample_data: bool = False
    limit: int | float | None = None  # samples per task, or a fraction of each task (0.1)
    samples: list[str] | None = None
    seed: int = DEFAULT_SEED
    repeats: int | None = None
    predict_only: bool = False
    ablations: tuple[str, ...] = ()
    media: dict[str, Any] = field(default_factory=dict)  # --media k=v, over each task's media block
    gen_kwargs: dict[str, Any] = field(default_factory=dict)  # --gen-kwargs k=v, over generation_kwargs
    score_only: bool = False  # `avhb score`: no model calls, every answer replayed from the journal
    command: list[str] = field(default_factory=list)
    write_report: bool = True
    shard: SampleSlice | None = None  # this process runs one slice of every task (--shard I/N)
    executor: Executor | None = None  # where backends run (--executor; None: in this process)
    replay_judges: bool = False  # every judge answer from the journal too (`avhb merge`): no call at all
    include_paths: list[str] = field(default_factory=list)  # --include_path folders (task YAML + hooks)
    batch_size: int | str | None = None  # --batch_size: requests in flight ("auto": the backend's own)
    allow_config_change: bool = False  # --allow-config-change: run other call settings in an existing run folder
    notes: list[str] = field(default_factory=list)  # said once at the start and kept in run.json
    # lm-eval's flags
    seeds: tuple[int | None, ...] | None = None  # --seed A,B,C,D: python, numpy, torch, few-shot (None: unset)
    system_instruction: str | None = None  # --system_instruction: first in each request's system message
    write_out: bool = False  # --write_out: print each task's first prompt before the first call
    max_cost: float | None = None  # --max-cost USD: refuse above the estimate, stop once spent
    max_errors: str = DEFAULT_MAX_ERRORS  # --max-errors as given (run.json: what `avhb merge` applies to the merged counts)
    num_fewshot: int | None = None  # --num_fewshot: over each task's num_fewshot (except a task's 0, as lm-eval)
    fewshot_as_multiturn: bool = True  # --fewshot_as_multiturn (lm-eval's default with a chat template)
    fewshot_seed: int | None = None  # the few-shot sampler's seed (None: --seed)

    def __post_init__(self) -> None:
        # --media as it lies over every task's block (frames replaces fps, fps frames), checked now and
        # recorded in that form: the CLI, the Python API and run.json read back all hold the same
        self.media = media_overrides(self.media)
        if self.fewshot_seed == self.seed:  # the same draw as the default: recorded as the default (None)
            self.fewshot_seed = None


def limit_for(limit: int | float | None, total: int) -> int | None:
    """How many of a task's ``total`` samples ``--limit`` keeps: a count,
    or a fraction rounded up (lm-eval's reading of ``--limit 0.1``)."""
    import math

    if limit is None:
        return None
    if isinstance(limit, float) and limit < 1:
        return int(math.ceil(total * limit))
    return int(limit)


def parse_ablations(text: str | None) -> tuple[str, ...]:
    items = tuple(a.strip() for a in (text or "").split(",") if a.strip())
    for a in items:
        if a not in ABLATIONS:
            raise UserError(f"--ablate {a!r}: unknown switch (choose from {', '.join(ABLATIONS)})")
    return items


# generation settings whose type is known: (type, lowest allowed value or None)
_GEN_NUMBERS: dict[str, tuple[type, float | None]] = {
    "max_tokens": (int, 1), "max_new_tokens": (int, 1), "max_gen_toks": (int, 1), "max_completion_tokens": (int, 1),
    "temperature": (float, 0), "top_p": (float, 0), "top_k": (int, 0), "min_p": (float, 0), "seed": (int, None),
    "n": (int, 1), "presence_penalty": (float, None), "frequency_penalty": (float, None),
    "repetition_penalty": (float, 0), "top_logprobs": (int, 0),
}


def check_gen_kwargs(gen: dict[str, Any], where: str = "--gen-kwargs") -> dict[str, Any]:
    """Refuse generation settings of the wrong type before any call
    (``max_tokens=lots`` would otherwise fail every sample); other keys pass
    through to the backend as given."""
    import math

    for key, value in gen.items():
        if key not in _GEN_NUMBERS:
            continue
        typ, low = _GEN_NUMBERS[key]
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        if ok and typ is int and value != int(value):
            ok = False
        if not ok or (low is not None and value < low):
            kind = "a whole number" if typ is int else "a number"
            bound = f" >= {low:g}" if low is not None else ""
            raise UserError(f"{where} {key}={value!r}: must be {kind}{bound}")
    return gen


def parse_error_budget(text: str) -> float:
    """``--max-errors``: ``5%`` or a share ``0.05`` (0 allows no failed
    sample, ``100%`` any number)."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:  # NaN fails too
        raise UserError(f"--max-errors {text!r}: give a share of samples, e.g. 5% or 0.05")
    return value


def media_plan(task: Any, options: RunOptions):
    """The task's media settings (its YAML block merged with ``--media``),
    parsed once; request building and materialisation both read it."""
    from avhb.media.materialize import MediaPlan

    spec = merged_media(task.cfg.get("media"), options.media, where=f"task {task.name}: media")
    return MediaPlan(spec, tuple(options.ablations), task.name, language=None if "{" in (spec.asr_language or "") else spec.asr_language)
