"""The ``embed/minilm`` judge kind.

It fills a judge role from the role's structured fields, not its prompt:
the similarity of ``fields["response"]`` to ``fields["reference"]``
(``model.text_similarity``; for a list of references, the highest), mapped
onto ``Request.choices`` (``mapping.reply_for``).  Arguments (``--judge ROLE=embed/minilm,k=v,...``):

``thresholds``   one number or an ascending list; exactly one fewer than the
                 role's replies (defaults: see ``mapping``)
``threshold``    the same, for yes/no roles (one number)
``device``       torch device for the model (default ``cpu``)
``threads``      torch intra-op threads, set process-wide before each
                 encode (default: leave torch's setting alone).  ``threads=1`` keeps a pair at
                 ~15 ms on a busy 2-core machine, where two threads can
                 degrade to ~300 ms
``response_field`` / ``reference_field``
                 which judge fields to compare (default ``response`` and
                 ``reference``)

A role without a mappable closed answer space, a thresholds list that does
not fit it, or a missing field gets a reply with ``Response.error`` set, so
avhb counts a judge failure instead of a made-up verdict.
"""
from __future__ import annotations

import asyncio
from typing import Any

from avhb import FREE, Backend, BackendSpec, Capabilities, Request, Response, UserError

from . import mapping, model

ARGS = {"thresholds", "threshold", "device", "threads", "response_field", "reference_field"}


class MiniLMJudge(Backend):
    capabilities = Capabilities(multi_turn=False, sees_pixels=False, max_context=256)
    # one encode at a time, in a worker thread (the event loop stays free):
    # torch already spreads one encode over the cores, and more threads than
    # cores slow a pair down by an order of magnitude
    concurrency = 1
    prices = FREE  # a model on this machine: its calls count as 0 USD in the estimate and under --max-cost

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        args = spec.args
        unknown = sorted(set(args) - ARGS)
        if unknown:
            raise UserError(f"judge {spec.label}: unknown argument(s) {unknown} (known: {sorted(ARGS)})")
        if "thresholds" in args and "threshold" in args:
            raise UserError(f"judge {spec.label}: give thresholds or threshold, not both")
        try:
            self.thresholds = mapping.parse_thresholds(args.get("thresholds", args.get("threshold")))
        except mapping.MappingError as exc:
            raise UserError(f"judge {spec.label}: {exc}") from None
        self.device = str(args.get("device", "cpu"))
        threads = args.get("threads")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise UserError(f"judge {spec.label}: threads must be a positive integer, got {threads!r}")
        self.threads: int | None = threads
        self.response_field = str(args.get("response_field", "response"))
        self.reference_field = str(args.get("reference_field", "reference"))
        try:
            self.model_version = model.model_version()
        except Exception:  # importlib.metadata.PackageNotFoundError
            raise UserError(f"judge {spec.label} needs the {model.MODEL_PACKAGE} package: install CPU torch "
                            f"first (pip install torch==2.13.0), then pip install {model.MODEL_PACKAGE}") from None

    @property
    def identity(self) -> dict[str, Any]:
        """The spec plus the model package version: a different model must
        not reuse journalled verdicts."""
        return {**super().identity, "model": self.model_version}

    async def generate(self, request: Request) -> Response:
        try:
            space = mapping.answer_space_of(request.choices)
            thresholds = mapping.resolve_thresholds(space, self.thresholds)
        except mapping.MappingError as exc:
            return Response(text="", error=str(exc))
        fields = request.fields or {}
        missing = [f for f in (self.response_field, self.reference_field) if f not in fields]
        if missing:
            return Response(text="", error=f"embed/minilm needs the judge field(s) {missing}; "
                                           f"the role sent {sorted(fields)}")
        response = _text(fields[self.response_field])
        references = fields[self.reference_field]
        references = [_text(r) for r in references] if isinstance(references, (list, tuple)) else [_text(references)]
        if not references:
            return Response(text="", error=f"embed/minilm: the {self.reference_field!r} field is an empty list")
        similarity = await asyncio.to_thread(self._best_similarity, response, references)
        reply = mapping.reply_for(similarity, space, thresholds)
        return Response(text=reply, meta={"similarity": similarity, "thresholds": list(thresholds)})

    def _best_similarity(self, response: str, references: list[str]) -> float:
        if self.threads is not None:
            model.set_threads(self.threads)
        encode = model.encoder(self.device)
        return max(model.text_similarity(response, ref, encode) for ref in references)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
