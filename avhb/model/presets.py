"""Model presets: a YAML catalogue of known models (``model_backends/presets.yaml``
and any plugin's ``avhb_model_presets``), so ``vllm:Qwen3-VL`` resolves to a
Hub id, engine settings, frame limits and context length, and every backend
knows what a known model takes (images per request, video, audio) instead of
guessing.

:func:`find_preset` is the one lookup every backend uses: a model name
matches a preset by the preset's own name, its ``hub_id`` or one of its
``aliases`` (case-insensitive).  A preset's ``backend`` is where its
``hub_id`` runs; ``backend_capabilities`` lists, per backend kind, what that
route cannot carry (Gemini's OpenAI-compatible endpoint takes no video part:
``{openai: {video: false}}``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from avhb.errors import UserError
from avhb.registry import Registry, get_registry

CAPABILITY_KEYS = ("images", "video", "audio")


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


@dataclass(frozen=True)
class Preset:
    """One catalogue entry, read (``presets.yaml``'s keys, module docstring)."""

    name: str
    backend: str
    hub_id: str
    context: int | None = None
    frames: int | None = None
    tokens_per_frame: int | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)  # images (per request), video, audio
    engine: dict[str, Any] = field(default_factory=dict)  # the ``vllm`` key: passed to vllm.LLM
    backend_capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_entry(cls, name: str, entry: dict[str, Any]) -> "Preset":
        return cls(name=name, backend=str(entry.get("backend", "")), hub_id=str(entry.get("hub_id") or name),
                   context=entry.get("context"), frames=entry.get("frames"),
                   tokens_per_frame=entry.get("tokens_per_frame"),
                   capabilities=dict(entry.get("capabilities") or {}), engine=dict(entry.get("vllm") or {}),
                   backend_capabilities={k: dict(v or {}) for k, v in
                                         (entry.get("backend_capabilities") or {}).items()})

    def capabilities_for(self, kind: str) -> dict[str, Any]:
        """``images``, ``video``, ``audio`` as backend ``kind`` gets them:
        the preset's, with what that route cannot carry taken out."""
        return {k: v for k, v in {**self.capabilities, **self.backend_capabilities.get(kind, {})}.items()
                if k in CAPABILITY_KEYS}

    def describe(self, kind: str) -> str:
        """``images 64, video, audio`` (what ``kind`` sends this model), for the run's note."""
        caps = self.capabilities_for(kind)
        said = [f"images {caps.get('images', 0)}", f"video {'yes' if caps.get('video') else 'no'}",
                f"audio {'yes' if caps.get('audio') else 'no'}"]
        if self.context:
            said.append(f"context {self.context}")
        return ", ".join(said)


def find_preset(*names: str, backend: str | None = None, registry: Registry | None = None) -> Preset | None:
    """The first preset one of ``names`` matches (its name, ``hub_id`` or an
    alias, case-insensitive), or None.  ``backend``: only presets whose
    ``hub_id`` runs on that backend (``vllm`` loads the weights itself and
    applies the preset's engine settings); a name that is another backend's
    preset's own name is then a one-line error saying where it runs."""
    presets = load_presets(registry)
    for name in names:
        if not name:
            continue
        wanted = name.lower()
        for preset_name, entry in presets.items():
            keys = [preset_name, entry.get("hub_id") or "", *(entry.get("aliases") or [])]
            if wanted not in (str(k).lower() for k in keys):
                continue
            preset = Preset.from_entry(preset_name, entry)
            if backend is None or preset.backend == backend:
                return preset
            if wanted == preset_name.lower():
                raise UserError(f"model preset {preset_name!r} runs on the {preset.backend} backend, not "
                                f"{backend}: --model {preset.backend}:{preset.hub_id} (see `avhb list models`)")
    return None

