"""``--hf_hub_log_args``: lm-eval's files pushed to Hugging Face Hub dataset
repos, as lm-eval's ``EvaluationTracker`` pushes them (the same keys):

- ``push_results_to_hub=True``: ``results_<date>.json`` to the results repo
  at ``<model_name>/results_<date>.json``;
- ``push_samples_to_hub=True``: the model folder (results and
  ``samples_<task>_<date>.jsonl``) to the details repo at
  ``<model_name_sanitized>/``;
- repos ``<hub_results_org>/<details_repo_name>`` (default
  ``lm-eval-results``) and ``<hub_results_org>/<results_repo_name>``
  (default: the details repo), with ``-private`` appended and created
  private unless ``public_repo=True``; ``hub_repo_name`` names both;
  ``hub_results_org`` defaults to the token's owner (``whoami``);
- the token: ``token=`` or ``$HF_TOKEN`` (never logged); none, with a push
  asked for, is refused before the run.

``gated``, ``leaderboard_url`` and ``point_of_contact`` are read but not
applied: avhb writes no dataset card (lm-eval's ``recreate_metadata_card``)
and sets no gating; said once when given.  ``$HF_ENDPOINT`` points at
another Hub (the tests' local one).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb.errors import UserError

KEYS = ("hub_results_org", "hub_repo_name", "details_repo_name", "results_repo_name", "push_results_to_hub",
        "push_samples_to_hub", "public_repo", "token", "leaderboard_url", "point_of_contact", "gated")
NOT_APPLIED = ("leaderboard_url", "point_of_contact", "gated")


@dataclass
class HubLog:
    org: str
    details_repo: str
    results_repo: str
    push_results: bool
    push_samples: bool
    public: bool
    token: str

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> "HubLog":
        unknown = sorted(set(args) - set(KEYS))
        if unknown:
            raise UserError(f"--hf_hub_log_args: unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
        push_results, push_samples = _bool(args, "push_results_to_hub"), _bool(args, "push_samples_to_hub")
        token = str(args.get("token") or os.environ.get("HF_TOKEN") or "")
        if (push_results or push_samples) and not token:
            raise UserError("--hf_hub_log_args: pushing to the Hub needs a token: set HF_TOKEN (or token=...)")
        for key in NOT_APPLIED:
            if args.get(key):
                print(f"avhb: note: --hf_hub_log_args {key}: read, not applied (avhb writes no dataset card and "
                      "sets no gating)", file=sys.stderr)
        details = str(args.get("hub_repo_name") or args.get("details_repo_name") or "lm-eval-results")
        results = str(args.get("hub_repo_name") or args.get("results_repo_name") or details)
        org = str(args.get("hub_results_org") or "")
        if (push_results or push_samples) and not org:
            org = _whoami(token)  # before the run, as lm-eval does: a bad token fails now
        public = _bool(args, "public_repo")
        suffix = "" if public else "-private"
        return cls(org, f"{org}/{details}{suffix}", f"{org}/{results}{suffix}", push_results, push_samples, public,
                   token)

    def push(self, export: Any, files: list[Path]) -> list[str]:
        """Upload what was asked; returns one line per upload."""
        from huggingface_hub import HfApi

        if not (self.push_results or self.push_samples):
            return ["nothing pushed (push_results_to_hub and push_samples_to_hub are off)"]
        api = HfApi(token=self.token)
        done = []
        results = files[0]
        if self.push_results:
            api.create_repo(self.results_repo, repo_type="dataset", private=not self.public, exist_ok=True)
            name = export.results["model_name"]
            api.upload_file(path_or_fileobj=str(results), path_in_repo=f"{name}/{results.name}",
                            repo_id=self.results_repo, repo_type="dataset",
                            commit_message=f"Adding aggregated results for {name}")
            done.append(f"{self.results_repo}: {name}/{results.name}")
        if self.push_samples:
            api.create_repo(self.details_repo, repo_type="dataset", private=not self.public, exist_ok=True)
            api.upload_folder(folder_path=str(results.parent), path_in_repo=export.model_dir,
                              repo_id=self.details_repo, repo_type="dataset",
                              allow_patterns=[p.name for p in files],
                              commit_message=f"Adding samples results for {export.results['model_name']}")
            done.append(f"{self.details_repo}: {export.model_dir}/ ({len(files)} files)")
        return done


def _bool(args: dict[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _whoami(token: str) -> str:
    from huggingface_hub import HfApi

    try:
        return str(HfApi(token=token).whoami()["name"])
    except Exception as exc:
        raise UserError(f"--hf_hub_log_args: the Hub did not accept the token ({type(exc).__name__}); set "
                        "hub_results_org=... or a valid HF_TOKEN") from None
