"""Registers the built-in model backends (kinds -> import paths) and the
model preset catalogue.  Nothing here imports a backend."""
from avhb import hookimpl

_B = "avhb.model_backends"


@hookimpl
def avhb_backends():
    return {
        "local": f"{_B}.local:LocalBackend",  # the offline default: Whisper + Gemma-3-270M
        "cascade": f"{_B}.cascade:CascadeBackend",  # speech-to-text, then any backend
        "random": f"{_B}.baselines:RandomBackend",
        "scripted": f"{_B}.baselines:ScriptedBackend",
        "openai": f"{_B}.openai_backend:OpenAIBackend",
        "openai-completions": f"{_B}.openai_completions:OpenAICompletionsBackend",  # /v1/completions, log-probabilities
        "azure": f"{_B}.openai_backend:AzureOpenAIBackend",  # Azure OpenAI's URL shape and api-key header
        "litellm": f"{_B}.litellm_backend:LiteLLMBackend",
        "vllm": f"{_B}.vllm_backend:VLLMBackend",
    }


@hookimpl
def avhb_transcribers():
    return {"whisper": f"{_B}.asr:transcribe"}  # faster-whisper, offline weights (avhb[local] or avhb[asr])


@hookimpl
def avhb_model_presets():
    return ["avhb.model_backends:presets.yaml"]
