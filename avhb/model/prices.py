"""What a backend's calls cost, where it is known: the estimate a run prints
before its first call and ``--max-cost`` read it.

``Backend.prices`` is a :class:`Prices` (USD per prompt token and per
completion token, and where the numbers come from) or ``None`` (unknown: a
self-hosted server, an Azure deployment).  Engines that run on this machine
(``local``, ``vllm``, the baselines) are :data:`FREE`.  API prices come from
LiteLLM's model map as its package ships it
(``model_prices_and_context_window_backup.json``), read as a file: no
network and no import of LiteLLM (seconds).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Prices:
    input: float  # USD per prompt token
    output: float  # USD per completion token
    source: str  # where the numbers come from, for the estimate line

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.input + completion_tokens * self.output


FREE = Prices(0.0, 0.0, "runs on this machine")


def from_model_info(info: dict[str, Any], model: str) -> Prices | None:
    """Prices from one entry of LiteLLM's map (``input_cost_per_token``...)."""
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(inp, (int, float)) or not isinstance(out, (int, float)):
        return None
    return Prices(float(inp), float(out), f"LiteLLM's price map for {model}")


@lru_cache(maxsize=1)
def _price_map() -> dict[str, Any]:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def litellm_map_prices(model: str) -> Prices | None:
    """The map's prices for ``model`` (also without a ``provider/`` prefix);
    None when LiteLLM is not installed or the model is not in its map."""
    table = _price_map()
    for name in (model, model.split("/", 1)[1] if "/" in model else None):
        if name and isinstance(table.get(name), dict):
            prices = from_model_info(table[name], name)
            if prices is not None:
                return prices
    return None
