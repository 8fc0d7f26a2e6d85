"""Every folder avhb reads or writes outside a run folder, in one place.

* ``cache_dir()``: ``$AVHB_CACHE_DIR``, else ``$XDG_CACHE_HOME/avhb``, else
  ``~/.cache/avhb``.  Holds the task index and registry caches (top level),
  the decoded-media cache (``media/``) and media files' content
  fingerprints (``fingerprints/``, :mod:`avhb.media.fingerprints`).
* ``media_cache_dir()``: ``cache_dir()/media``.
* ``data_dir()``: ``$AVHB_DATA_DIR``, else ``cache_dir()/data``: prepared
  Hub snapshots and pack downloads (``avhb prepare``).
* ``built_media_dir()``: ``cache_dir()/built``: media a pack builds itself
  (stitched grids, rendered pages), one subfolder per pack.  Only avhb and
  pack code write there, so its files are trusted by construction: media
  confinement (``avhb.taskdef.requests``) accepts them next to the data
  root.
* ``models_dir()``: ``$AVHB_MODEL_CACHE``, else ``cache_dir()/models``:
  model files built on this machine (the offline default's assembled
  weights).
* ``hf_hub_cache()``: the Hugging Face Hub cache as the environment says
  now (``HF_HUB_CACHE``, ``HF_HOME``), read at call time because
  ``huggingface_hub`` reads it once at import.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("AVHB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "avhb"


def media_cache_dir() -> Path:
    return cache_dir() / "media"


def built_media_dir() -> Path:
    return cache_dir() / "built"


def data_dir() -> Path:
    env = os.environ.get("AVHB_DATA_DIR")
    return Path(env).expanduser() if env else cache_dir() / "data"


def models_dir() -> Path:
    env = os.environ.get("AVHB_MODEL_CACHE")
    return Path(env).expanduser() if env else cache_dir() / "models"


def hf_hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"
