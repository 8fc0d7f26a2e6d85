"""``--wandb_args``: a finished run logged to Weights & Biases, as lm-eval's
``WandbLogger`` logs one: ``wandb.init(**wandb_args)`` with the run's
settings as ``config`` (plus ``--wandb_config_args``), every task's and
group's ``<task>/<metric>,<filter>`` value (and stderr) in the run summary,
the results table (``evaluation/eval_results``: Tasks, Version, Filter,
num_fewshot, Metric, Value, Stderr), one table of samples per task
(``<task>_eval_results``), avhb's ``report.html`` as ``evaluation/report``,
and an ``eval_results`` artifact holding ``results.json``, ``run.json``,
``report.html`` and the lm-eval files.  ``WANDB_MODE=offline`` writes it
all under ``$WANDB_DIR`` (what the tests read back) for ``wandb sync``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.runfolder.layout import report_file, results_file, run_file


def check_wandb() -> None:
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise UserError("--wandb_args needs the wandb package (pip install wandb)")


def log_run(run_dir: Path, export: Any, init: dict[str, Any], config: dict[str, Any]) -> str:
    """Log the run; returns where it went (the W&B run's URL, or its offline folder)."""
    import wandb

    document = export.results
    settings = {"model": document["config"]["model"], "model_name": document["model_name"],
                "model_args": document["config"]["model_args"], "limit": document["config"]["limit"],
                "gen_kwargs": document["config"]["gen_kwargs"], "tasks": sorted(document["configs"]),
                "seed": document["config"]["torch_seed"]}
    run = wandb.init(**{"job_type": "eval", **init}, config={**settings, **config})
    try:
        summary: dict[str, Any] = {}
        rows = []
        for task, block in document["results"].items():
            for key, value in block.items():
                if "," not in key or "_stderr," in key:
                    continue
                metric, filt = key.split(",", 1)
                stderr = block.get(f"{metric}_stderr,{filt}")
                summary[f"{task}/{key}"] = value
                if isinstance(stderr, (int, float)):
                    summary[f"{task}/{metric}_stderr,{filt}"] = stderr
                rows.append([task, str(document["versions"].get(task)), filt, document["n-shot"].get(task, 0), metric,
                             value, stderr if isinstance(stderr, (int, float)) else None])
        run.summary.update(summary)
        tables: dict[str, Any] = {"evaluation/eval_results": wandb.Table(
            columns=["Tasks", "Version", "Filter", "num_fewshot", "Metric", "Value", "Stderr"], data=rows)}
        for task, lines in export.samples.items():
            columns = ["doc_id", "target", "response", "filtered_response", *sorted({m for s in lines for m in s["metrics"]})]
            tables[f"{task}_eval_results"] = wandb.Table(columns=columns, data=[
                [s["doc_id"], s["target"], s["resps"][0][0] if s["resps"][0] else "", s["filtered_resps"][0]
                 if s["filtered_resps"] else "", *(s.get(m) for m in columns[4:])] for s in lines])
        report = report_file(run_dir)
        if report.is_file():
            tables["evaluation/report"] = wandb.Html(report.read_text(encoding="utf-8"), inject=False)  # as written
        run.log(tables)
        artifact = wandb.Artifact("results", type="eval_results")
        for path in (results_file(run_dir), run_file(run_dir), report):
            if path.is_file():
                artifact.add_file(str(path))
        for path in export.paths(run_dir).values():
            if path.is_file():
                artifact.add_file(str(path), name=f"lm-eval/{path.name}")
        run.log_artifact(artifact)
        where = getattr(run, "url", None) or str(getattr(run, "dir", ""))
    finally:
        run.finish()
    return where
