"""Model presets: a YAML catalogue of known models, so ``vllm:Qwen3-VL``
resolves to a Hub id, capabilities, frame limits and context length."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from avhb.errors import UserError
from avhb.registry import Registry, get_registry


@lru_cache(maxsize=1)
def _load(files: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    import importlib.resources as res

    import yaml

    out: dict[str, dict[str, Any]] = {}
    for ref in files:
        package, _, name = ref.partition(":")
        data = yaml.safe_load(res.files(package).joinpath(name).read_text(encoding="utf-8")) or {}
        for model, preset in (data.get("models") or {}).items():
            out[model] = dict(preset)
    return out


def load_presets(registry: Registry | None = None) -> dict[str, dict[str, Any]]:
    registry = registry or get_registry()
    return _load(tuple(registry.preset_files))


def get_preset(name: str) -> dict[str, Any]:
    presets = load_presets()
    if name in presets:
        return presets[name]
    lowered = {k.lower(): k for k in presets}
    if name.lower() in lowered:
        return presets[lowered[name.lower()]]
    raise UserError(f"unknown model preset {name!r} (see `avhb list models`), or pass a Hub id / local path")
