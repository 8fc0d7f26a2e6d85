"""Filters written for lm-eval or lmms-eval, run as avhb filter steps.

The peers' filters work on a batch: ``apply(resps, docs)`` takes every
sample's list of answers and the samples, and returns the filtered lists
in order.  avhb runs a pipeline sample by sample, so :class:`PeerFilter`
gives the peer's filter one sample at a time: ``apply([answers], [doc])``
and its first result.  In an lm-eval pipeline the answers are the list of
a sample's answers to every repeat, as the peers pass ``inst.resps`` along
their pipelines.  One answer (avhb's own chain, or what a selection such as
``take_first`` left, as avhb's own filters take it: lm-eval would iterate
its characters) goes as a list of one, ``apply([[answer]], [doc])``, and
comes back as the filter's one result (its list of one unwrapped).

A filter a task's own module registers by name in a peer's registry (lm-eval's
``@register_filter("NAME")`` in a task's ``utils.py``) is found there once
the task's hook modules are imported (:func:`registered_by_peer`)."""
from __future__ import annotations

import asyncio
import sys
from typing import Any

from avhb.score.metric import Filter, SampleRecord, ScoreContext


class PeerFilter(Filter):
    """One of the peers' filter objects as an avhb pipeline step."""

    def __init__(self, inner: Any, name: str):
        super().__init__()
        self.inner = inner
        self.name = name

    def _one(self, values: list[Any], doc: dict[str, Any]) -> Any:
        """The peer's result for one sample's answers."""
        return list(self.inner.apply([values], [doc]))[0]

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        """One answer: the filter's result for it (a selection's value as it
        is, a per-answer filter's list of one unwrapped)."""
        result = await asyncio.to_thread(self._one, [value], record.doc)
        return result[0] if isinstance(result, list) and len(result) == 1 else result

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        """A sample's answers to every repeat, as the peer takes them; a value
        that is no longer a list goes to :meth:`apply`."""
        if not isinstance(values, list):
            return await self.apply(values, record, ctx)
        return await asyncio.to_thread(self._one, values, record.doc)


def is_peer_filter(obj: Any) -> bool:
    """An object with the peers' ``apply(resps, docs)``, not an avhb Filter."""
    return not isinstance(obj, Filter) and callable(getattr(obj, "apply", None))


def registered_by_peer(name: str) -> Any:
    """The filter class a peer's registry holds under ``name`` (filled by the
    task modules imported so far), or None.  Looks only in registries
    already imported: avhb never imports a peer to ask."""
    lm_eval = sys.modules.get("lm_eval.api.registry")
    if lm_eval is not None:
        try:
            return lm_eval.get_filter(name)
        except (KeyError, ValueError, TypeError):
            pass
    for module in ("lmms_eval.api.registry", "lmms_eval.filters"):
        registry = getattr(sys.modules.get(module), "FILTER_REGISTRY", None)
        if isinstance(registry, dict) and name in registry:
            return registry[name]
    return None
