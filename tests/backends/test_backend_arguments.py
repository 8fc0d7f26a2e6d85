"""Each built-in backend declares its model arguments once
(``Backend.arguments``): its unknown-argument error lists them,
``avhb list backends`` prints one line each, and docs/backends.md is
generated from them (``python -m avhb.model.backend_reference``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from avhb.errors import UserError
from avhb.model.backend import Argument, parse_backend_spec
from avhb.model.backend_reference import argument_lines, builtin_backends, reference
from avhb.model_backends.plugin import avhb_backends
from avhb.registry import import_path
from tests.conftest import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"
BACKENDS = avhb_backends()


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_every_argument_a_backend_takes_has_a_type_default_and_one_line(kind):
    cls = import_path(BACKENDS[kind])
    assert cls.arguments, f"{kind} declares no arguments"
    for name, arg in cls.arguments.items():
        assert isinstance(arg, Argument) and re.fullmatch(r"[a-z_]+", name)
        assert arg.type.strip() and arg.help.strip() and isinstance(arg.default, str), (kind, name)
        assert "\n" not in arg.help and "\n" not in arg.type and "\n" not in arg.default, (kind, name)


# a misspelt argument for each backend that checks its own: the error lists exactly the declared ones
MISSPELT = {
    "openai": "openai:m,base_url=http://127.0.0.1:9/v1,audoi=true",
    "azure": "azure:d,base_url=http://127.0.0.1:9,api_version=2024-10-21,audoi=true",
    "openai-completions": "openai-completions:m,base_url=http://127.0.0.1:9/v1,audoi=true",
    "litellm": "litellm:openai/m,audoi=true",
    "vllm": "vllm:some/model,audoi=true",
    "local": "local,audoi=true",
    "random": "random,audoi=true",
    "scripted": "scripted,replies=x.json,audoi=true",
}


@pytest.mark.parametrize("kind", sorted(MISSPELT))
def test_the_unknown_argument_error_lists_the_declared_arguments(kind):
    cls = import_path(BACKENDS[kind])
    with pytest.raises(UserError) as info:
        cls(parse_backend_spec(MISSPELT[kind]))
    message = str(info.value)
    assert message.startswith(f"{kind} backend: unknown argument(s) audoi ")
    known = re.search(r"\(known: ([^;)]*)", message).group(1).split(", ")
    assert known == sorted(cls.arguments)
    assert "avhb list backends" in message


def test_every_kind_checks_its_arguments_or_passes_them_on():
    """A kind either refuses what it does not declare (above) or names the
    backend the rest goes to (the cascade: its llm)."""
    assert set(MISSPELT) | {"cascade"} == set(BACKENDS)
    from avhb.model_backends.cascade import ARGUMENTS, CascadeBackend, split_cascade_args

    assert CascadeBackend.arguments_pass_on == "llm" and "llm" in ARGUMENTS
    own, inner = split_cascade_args(parse_backend_spec("cascade:asr=whisper-tiny.en,llm=openai:m,timestamps=false,"
                                                       "language=de,audio=true"))
    assert sorted(own) == sorted(ARGUMENTS) and inner.args == {"audio": True}


def test_the_openai_defaults_said_are_the_ones_it_uses(monkeypatch):
    from avhb.model_backends.openai_backend import OPENAI_ARGUMENTS, OpenAIBackend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    b = OpenAIBackend(parse_backend_spec("openai:m,base_url=http://127.0.0.1:9/v1"))
    used = {"concurrency": b.settings.concurrency, "timeout": b.settings.timeout,
            "max_retries": b.settings.max_retries, "api_key_env": b.settings.api_key_env,
            "images_per_request": b.capabilities.images, "video": b.capabilities.video,
            "audio": b.capabilities.audio, "max_context": b.capabilities.max_context,
            "tokens_per_frame": b.capabilities.tokens_per_frame, "max_tokens_param": b.max_tokens_param,
            "extra_body": b.extra_body}
    for name, value in used.items():
        said = OPENAI_ARGUMENTS[name].default.removeprefix("the model preset's, else ")  # "m": no preset
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        assert said in (shown, shown.removesuffix(".0")), (name, said, value)


def test_every_declared_openai_argument_is_taken(monkeypatch):
    from avhb.model_backends.openai_backend import AZURE_ARGUMENTS, OpenAIBackend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "AVHB_TEST_NO_KEY", "concurrency": 3,
              "timeout": 5, "max_retries": 1, "organization": "o", "project": "p", "images_per_request": 4,
              "video": True, "audio": True, "max_context": 1000, "tokens_per_frame": 100,
              "max_tokens_param": "max_completion_tokens", "extra_body": {"top_k": 20}}
    assert set(values) == set(OpenAIBackend.arguments) == set(AZURE_ARGUMENTS) - {"api_version", "deployment"}
    b = OpenAIBackend(parse_backend_spec("openai:m", ",".join(f"{k}={json.dumps(v)}" if isinstance(v, dict)
                                                              else f"{k}={v}" for k, v in values.items())))
    assert b.capabilities.audio and b.capabilities.images == 4 and b.concurrency == 3


def test_the_engine_arguments_are_the_ones_said_to_go_to_vllm():
    from avhb.model_backends.vllm_backend import ARGUMENTS, ENGINE_ARGS

    assert set(ENGINE_ARGS) == {n for n, a in ARGUMENTS.items() if a.help.startswith("passed to vllm.LLM")}
    assert {"max_model_len", "limit_mm_per_prompt", "tensor_parallel_size"} <= set(ENGINE_ARGS)
    assert not {"audio", "video", "images", "frames", "batch_size", "model"} & set(ENGINE_ARGS)


def test_docs_backends_md_is_the_generators_output():
    assert DOC.read_text(encoding="utf-8") == reference(), \
        "regenerate: python -m avhb.model.backend_reference > docs/backends.md"
    text = DOC.read_text(encoding="utf-8")
    for kind, path in builtin_backends().items():
        assert f"## `{kind}`" in text
        for name in import_path(path).arguments:
            assert f"| `{name}` |" in text
    assert set(builtin_backends()) == set(BACKENDS)


def test_list_backends_prints_each_argument_with_its_line():
    from avhb.model_backends.openai_backend import OPENAI_ARGUMENTS

    proc = run_cli("list", "backends")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("openai\tavhb.model_backends.openai_backend:OpenAIBackend")
    audio = OPENAI_ARGUMENTS["audio"]
    assert f"    audio\t{audio.type}, default {audio.default}\t{audio.help}" in lines[start:start + 20]
    assert "true: the model hears audio" in audio.help
    for kind in BACKENDS:
        assert any(line.startswith(f"{kind}\t") for line in lines), kind

    one = run_cli("list", "backends", "openai")
    assert one.returncode == 0 and one.stdout.splitlines() == \
        ["openai\tavhb.model_backends.openai_backend:OpenAIBackend"] + \
        [f"    {line}" for line in argument_lines(import_path(BACKENDS["openai"]))]
    as_json = json.loads(run_cli("list", "backends", "vllm", "--json").stdout)
    assert list(as_json) == ["vllm"] and as_json["vllm"]["arguments"]["audio"]["type"] == "bool"

    bad = run_cli("list", "backends", "opnai")
    assert bad.returncode == 2 and "unknown backend 'opnai'" in bad.stderr
    assert run_cli("list", "tasks", "x").returncode == 2
