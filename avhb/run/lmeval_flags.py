"""lm-eval's run flags, as avhb carries them out (issue 24).

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
  with the run's results kept.
"""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.errors import EnvironmentFailure, UserError


def kv_args(values: list[str] | None, flag: str) -> dict[str, Any]:
    """lm-eval's ``k=v`` lists: space- or comma-separated (``project=a name=b``
    or ``project=a,name=b``), values read as YAML scalars."""
    from avhb.model.backend import parse_kv

    try:
        return parse_kv(",".join(values or []))
    except UserError as exc:
        raise UserError(f"{flag}: {exc}") from None


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
                     f"sampling seed is {1234 if torch is None else torch} (+ the repeat)"
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


@dataclass
class Publishing:
    """What happens after the run: lm-eval's files, ``--show_config``, W&B, the Hub."""

    wandb_init: dict[str, Any] | None = None
    wandb_config: dict[str, Any] = field(default_factory=dict)
    hub: Any = None  # avhb.report.hub_log.HubLog

    @classmethod
    def from_args(cls, args: Any) -> "Publishing":
        out = cls()
        if args.wandb_args is not None or args.wandb_config_args is not None:
            from avhb.report.wandb_log import check_wandb

            check_wandb()
            out.wandb_init = kv_args(args.wandb_args, "--wandb_args")
            out.wandb_config = kv_args(args.wandb_config_args, "--wandb_config_args")
        if args.hf_hub_log_args is not None:
            from avhb.report.hub_log import HubLog

            out.hub = HubLog.from_args(kv_args(args.hf_hub_log_args, "--hf_hub_log_args"))
        return out

    def after_run(self, run_dir: Path, lm_eval_files: bool, show_config: bool) -> None:
        if not (lm_eval_files or show_config or self.wandb_init is not None or self.hub is not None):
            return
        from avhb.report.lmeval import build_export, write_export

        export = build_export(run_dir)
        files = []
        if lm_eval_files or self.hub is not None:
            files = write_export(export, run_dir, replace=True)
            print(f"lm-eval files: {files[0].parent}", file=sys.stderr)
        if show_config:
            print(json.dumps(export.results, indent=2, ensure_ascii=False, default=str))
        failed = []
        if self.wandb_init is not None:
            from avhb.report.wandb_log import log_run

            try:
                where = log_run(run_dir, export, self.wandb_init, self.wandb_config)
                print(f"W&B: {where}", file=sys.stderr)
            except Exception as exc:  # the run's results are written; say what did not happen
                failed.append(f"logging to W&B failed: {type(exc).__name__}: {exc}")
        if self.hub is not None:
            try:
                for line in self.hub.push(export, files):
                    print(f"Hub: {line}", file=sys.stderr)
            except Exception as exc:
                failed.append(f"pushing to the Hub failed: {type(exc).__name__}: {exc}")
        if failed:
            raise EnvironmentFailure("; ".join(failed) + f" (the run's results are in {run_dir})")
