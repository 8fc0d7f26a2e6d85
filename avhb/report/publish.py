"""What happens after a run (lm-eval's run flags, :mod:`avhb.run.lmeval_flags`):
lm-eval's files (``--output_path``), ``--show_config``, W&B
(``--wandb_args``) and the Hub (``--hf_hub_log_args``).  Checked before the
first call, carried out once the run folder is written."""
from __future__ import annotations

import json
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
