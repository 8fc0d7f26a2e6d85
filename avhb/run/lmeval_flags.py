"""lm-eval's run flags, as avhb carries them out.

Each keeps lm-eval 0.4.13's meaning; where avhb's differs, the run says so
once (:func:`lm_eval_notes`: a note on stderr, kept in ``run.json``):

- ``--output_path OUT``: the run folder (as ``--output-dir``); when the run
  ends, lm-eval's own files are written under ``OUT/<model>/`` too
  (:mod:`avhb.report.lmeval`).
- ``--verbosity LEVEL``: the log level of the libraries avhb uses
  (``datasets``, ``huggingface_hub``, ``litellm``...); ``ERROR`` and
  ``CRITICAL`` also hide progress lines.  avhb's notes and warnings are
  always printed: they say what changed.
- ``--use_cache PATH``: lm-eval's response cache is avhb's journal, kept in
  the run folder; PATH is not read.
- ``--system_instruction TEXT``: before each task's own system text.
- ``--seed A,B,C,D``: Python's and NumPy's global generators seeded with A
  and B at start; C is the model's sampling seed (C + repeat per request,
  1234 when C is None: avhb always seeds, so a rerun replays); D the
  few-shot sampler's.
- ``--show_config``: lm-eval's results document (every task's
  configuration) printed after the run.
- ``--wandb_args`` / ``--wandb_config_args``: :mod:`avhb.report.wandb_log`;
  ``--hf_hub_log_args``: :mod:`avhb.report.hub_log`.  Both are checked
  before the first call (the package is there, the keys are known, a token
  exists) and run after the results are written: a failure there exits 1
  with the run's results kept (:mod:`avhb.report.publish`).
"""
from __future__ import annotations

import logging
from typing import Any

from avhb.options import DEFAULT_SEED


def lm_eval_notes(args: Any, spec: Any) -> list[str]:
    """The notes the lm-eval flags of this command need (module docstring)."""
    notes = []
    if args.log_samples:
        notes.append("--log_samples: accepted; avhb always logs every sample (samples/<task>.jsonl)")
    if args.apply_chat_template is not None:
        notes.append("--apply_chat_template: accepted; chat templates are always applied where the backend has one "
                     "(API backends apply their own; vllm uses the model's; local is a base model with none)")
    if args.output_path:
        notes.append(f"--output_path {args.output_path}: the run folder (run.json, results.json, samples/, journal/); "
                     f"lm-eval's results_<date>.json and samples_<task>_<date>.jsonl are written under "
                     f"{args.output_path}/<model>/ when the run ends")
    if args.use_cache:
        notes.append(f"--use_cache {args.use_cache}: avhb's response cache is the run folder's journal; re-running "
                     "this command with the same run folder sends no request answered before; the path is not used")
    if args.verbosity:
        apply_verbosity(args.verbosity)
        notes.append(f"--verbosity {args.verbosity}: the log level of the libraries avhb uses"
                     + ("; progress lines hidden" if args.verbosity in ("ERROR", "CRITICAL") else "")
                     + "; avhb's notes and warnings are always printed")
    if args.system_instruction:
        notes.append("--system_instruction: first in each request's system message (before the task's own system "
                     "prompt); requests a driver builds itself are sent as it builds them")
    if args.seed is not None and len(set(args.seed)) > 1 or (args.seed and args.seed[2] is None):
        py, np_, torch, fewshot = args.seed
        notes.append(f"--seed {','.join(map(str, args.seed))}: python {py} and numpy {np_} seeded at start; the model's "
                     f"sampling seed is {DEFAULT_SEED if torch is None else torch} (+ the repeat)"
                     + (" (None: avhb always seeds, so a rerun replays)" if torch is None else "")
                     + f"; few-shot {fewshot}")
    return notes


def apply_verbosity(level: str) -> None:
    from avhb.run.progress import Progress

    logging.basicConfig(level=level)
    logging.getLogger().setLevel(level)
    for name in ("datasets", "huggingface_hub", "LiteLLM", "litellm", "urllib3", "filelock"):
        logging.getLogger(name).setLevel(level)
    Progress.quiet = level in ("ERROR", "CRITICAL")


def seed_globals(seeds: tuple[int | None, ...]) -> None:
    """lm-eval's first two seeds: Python's and NumPy's global generators."""
    import random

    if seeds[0] is not None:
        random.seed(seeds[0])
    if seeds[1] is not None:
        import numpy as np

        np.random.seed(seeds[1])
