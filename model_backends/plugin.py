"""Registers the built-in model backends (kinds -> import paths) and the
model preset catalogue."""
from avhb.hookspecs import hookimpl

from .registry_entries import BACKENDS


@hookimpl
def avhb_backends():
    return {
        **BACKENDS,
        "openai": "avhb.model_backends.openai_backend:OpenAIBackend",
        "litellm": "avhb.model_backends.litellm_backend:LiteLLMBackend",
        "vllm": "avhb.model_backends.vllm_backend:VLLMBackend",
    }


@hookimpl
def avhb_model_presets():
    return ["avhb.model_backends:presets.yaml"]
