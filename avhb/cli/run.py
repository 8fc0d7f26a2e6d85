"""``avhb run`` (also ``avhb --tasks ...``): the run's flags, lm-eval's
spellings of them, and :func:`options_from_args`, the one place a
:class:`~avhb.options.RunOptions` is built from the arguments."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from avhb.cli.listing import list_index
from avhb.cli.output import print_results
from avhb.cli.parsing import (
    VERBOSITY,
    add_flag,
    batch_size_arg,
    count_arg,
    limit_arg,
    seeds_arg,
    truth_arg,
)
from avhb.errors import UserError
from avhb.options import DEFAULT_MAX_ERRORS, DEFAULT_SEED, RunOptions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", "-t", nargs="+", default=None,
                   help="comma-separated tasks, groups, tags or globs ('list', 'list_groups', 'list_tags': list them)")
    p.add_argument("--model", "-M", default="local",
                   help="BACKEND:NAME[,k=v...], e.g. vllm:Qwen3-VL, openai:gpt-4.1, local (default); a known "
                        "model takes what its preset says (`avhb list models`); another gets audio as a "
                        "transcript unless its spec says audio=true (openai:NAME,audio=true); each backend's "
                        "arguments: `avhb list backends`")
    add_flag(p, "--model-args", "-a", default=None,
          help="k=v,... passed to the backend, e.g. audio=true (the model hears audio, else it gets a "
               "transcript), video=true, images_per_request=8; `avhb list backends NAME` lists them")
    p.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                   help="bind a judge role (repeat for a panel; '*=SPEC' binds every role); a judge that "
                        "should hear a role's audio takes audio=true like --model (`avhb list judges`, "
                        "`avhb list backends`)")
    p.add_argument("--data", action="append", default=[], metavar="NAME=PATH",
                   help="point a benchmark, group or task at a local copy of its upstream release")
    add_flag(p, "--sample-data", action="store_true", help="run on each task's bundled sample pack")
    add_flag(p, "--output-dir", dest="output_dir", default=None,
          help="run folder (re-running the same command resumes it)")
    p.add_argument("--limit", "-L", type=limit_arg, default=None, help="first N samples per task, or a fraction (0.1)")
    p.add_argument("--samples", default=None, help="comma-separated sample ids")
    p.add_argument("--seed", type=seeds_arg, default=None, metavar="S|PY,NUMPY,TORCH,FEWSHOT",
                   help=f"the seed (default {DEFAULT_SEED}), or lm-eval's four: python, numpy, torch (the model's sampling "
                        "seed), few-shot; 'None' leaves one unset")
    p.add_argument("--repeats", type=int, default=None, help="override the tasks' repeats")
    add_flag(p, "--predict-only", "-x", action="store_true", help="generate and log, no metrics or judges")
    p.add_argument("--ablate", default=None,
                   help="modality switches: no_audio,no_video,no_boxes,audio_as_transcript,text_only")
    p.add_argument("--media", default=None, metavar="k=v,...",
                   help="override the tasks' media block, e.g. frames=64 (frame sweeps) or fps=1,max_frames=128")
    add_flag(p, "--gen-kwargs", default=None, metavar="k=v,...",
          help="override generation settings, e.g. max_tokens=4096,temperature=0.3")
    add_flag(p, "--no-report", action="store_true", help="skip report.html")
    add_flag(p, "--max-errors", default=DEFAULT_MAX_ERRORS, metavar="SHARE",
          help="error budget: exit 1 when more samples than this failed outside the model (e.g. 5%% or "
               f"0.05, default {DEFAULT_MAX_ERRORS.replace('%', '%%')}); they are excluded from the metrics and retried by re-running")
    add_flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR",
          help="also load task YAML and hooks from DIR (tasks named DIR's-name/task)")
    add_flag(p, "--batch-size", "-b", type=batch_size_arg, default=None, metavar="N",
          help="at most N requests in flight (the backend's concurrency); 'auto' keeps the backend's")
    add_flag(p, "--log-samples", "-s", action="store_true", help="accepted for lm-eval users: samples are always logged")
    add_flag(p, "--apply-chat-template", nargs="?", const=True, default=None, metavar="NAME",
          help="accepted for lm-eval users: chat templates are always applied where the backend has one")

    # lm-eval's few-shot flags (its other run flags: _lm_eval_flags)
    add_flag(p, "--num-fewshot", "-f", type=count_arg, default=None, metavar="N",
          help="few-shot examples per sample, over each task's num_fewshot (a task that sets 0 keeps 0, as lm-eval)")
    add_flag(p, "--fewshot-as-multiturn", type=truth_arg, nargs="?", const=True, default=True, metavar="true|false",
          help="few-shot examples as turns of their own (default, as lm-eval with a chat template), or with "
               "'false' all in the one user message")

    add_flag(p, "--shard", default=None, metavar="I/N",
          help="run shard I of N (0-based) of every task's samples; combine with `avhb merge`")
    add_flag(p, "--executor", default=None, metavar="local|ray[:ADDRESS][,workers=N]",
          help="where backends run: this process (local, default) or a Ray cluster")
    add_flag(p, "--max-cost", type=float, default=None, metavar="USD",
          help="refuse to start when the estimated cost is above USD (or unknown); stop sending once it is spent")
    add_flag(p, "--allow-config-change", action="store_true",
          help="run settings that change the model's calls (model, --gen-kwargs, --media, --ablate, data, seed...) "
               "in an existing --output-dir; its finished results are kept in previous/")
    _lm_eval_flags(p)


def _lm_eval_flags(p: argparse.ArgumentParser) -> None:
    """lm-eval 0.4.13's run flags under their own spellings.  Each
    keeps lm-eval's meaning; where avhb's must differ, the run says so once
    (a note on stderr, kept in run.json)."""
    p.add_argument("--output_path", "-o", default=None, metavar="DIR",
                   help="the run folder, as --output-dir; lm-eval's results_<date>.json and "
                        "samples_<task>_<date>.jsonl are written under DIR/<model>/ too")
    p.add_argument("--verbosity", "-v", type=str.upper, default=None, choices=VERBOSITY, metavar="LEVEL",
                   help="log level of the libraries (DEBUG, INFO, WARNING, ERROR, CRITICAL); ERROR and above also "
                        "hide progress lines")
    p.add_argument("--write_out", "-w", action="store_true", help="print each task's first prompt and target")
    p.add_argument("--show_config", action="store_true",
                   help="print the results with every task's configuration (lm-eval's JSON) after the run")
    p.add_argument("--use_cache", "-c", default=None, metavar="PATH",
                   help="accepted: the run folder's journal is avhb's cache (re-run the command to reuse it)")
    p.add_argument("--system_instruction", default=None, metavar="TEXT",
                   help="a system instruction before each task's own system prompt")
    p.add_argument("--wandb_args", nargs="+", default=None, metavar="k=v",
                   help="log results and the report to Weights & Biases: wandb.init arguments (project=...,name=...)")
    p.add_argument("--wandb_config_args", nargs="+", default=None, metavar="k=v", help="more wandb.config values")
    p.add_argument("--hf_hub_log_args", nargs="+", default=None, metavar="k=v",
                   help="push the lm-eval files to Hub dataset repos (hub_results_org=...,push_results_to_hub=True,"
                        "push_samples_to_hub=True,...; token from $HF_TOKEN)")


def command(args, argv) -> int:
    from avhb.api import evaluate
    from avhb.model.backend import parse_backend_spec
    from avhb.report.publish import Publishing
    from avhb.run.budget import OverBudget
    from avhb.run.lmeval_flags import lm_eval_notes, seed_globals

    if not args.tasks:
        raise UserError("--tasks is required (comma-separated tasks, groups or tags; `avhb list tasks` names them)")
    tasks = ",".join(args.tasks)  # lm-eval also takes them space-separated
    listing = {"list": "tasks", "list_groups": "groups", "list_tags": "tags", "list_subtasks": "tasks"}
    if tasks in listing:  # lm-eval's --tasks list (avhb list tasks|groups|tags)
        return list_index(listing[tasks])
    if args.limit is not None and args.limit < 0:
        raise UserError(f"--limit {args.limit}: must be 0 or more")
    if args.repeats is not None and args.repeats < 1:
        raise UserError(f"--repeats {args.repeats}: must be 1 or more")
    spec = parse_backend_spec(args.model, args.model_args)
    if args.output_dir and args.output_path:
        raise UserError("--output-dir and --output_path name the same run folder: give one")
    folder = args.output_path or args.output_dir
    output = Path(folder) if folder else Path("runs") / _default_run_name(tasks, spec.label)
    notes = lm_eval_notes(args, spec)
    publish = Publishing.from_args(args)  # W&B and Hub settings checked before any call
    options = options_from_args(args, argv, spec, output, notes)
    seeds = options.seeds or (None, None, DEFAULT_SEED, DEFAULT_SEED)
    seed_globals(seeds)
    over = None
    try:
        results = evaluate(options)
    except OverBudget as exc:  # the run's outcome (avhb.run.budget): published as any finished run, then exit 1
        results, over = exc.results, str(exc)
    print_results(results, output)
    print(f"\nrun folder: {output}", file=sys.stderr)
    publish.after_run(output, lm_eval_files=args.output_path is not None, show_config=args.show_config)
    if over:
        print(f"avhb: error: {over}", file=sys.stderr)
        return 1
    return 0


def options_from_args(args: argparse.Namespace, argv: list[str], spec, output: Path, notes: list[str]) -> RunOptions:
    """The run's :class:`RunOptions` from its parsed arguments (``spec``:
    the parsed ``--model``; ``output``: the run folder; ``notes``: lm-eval
    flags' notes).  The one place arguments become options; the defaults are
    :mod:`avhb.options`'."""
    from avhb.cluster.executor import parse_executor
    from avhb.cluster.shard import Shard
    from avhb.data.sources import parse_data_flags
    from avhb.model.backend import parse_kv
    from avhb.options import check_gen_kwargs, parse_ablations
    from avhb.score.judges import parse_judge_bindings

    seeds = args.seed or (None, None, DEFAULT_SEED, DEFAULT_SEED)
    seed = DEFAULT_SEED if seeds[2] is None else seeds[2]
    return RunOptions(
        tasks=[t.strip() for t in ",".join(args.tasks).split(",") if t.strip()], model=spec, output_dir=output,
        judges=parse_judge_bindings(args.judge), judge_args=list(args.judge), data=parse_data_flags(args.data), sample_data=args.sample_data,
        limit=args.limit, samples=_sample_ids(args.samples), seed=seed,
        repeats=args.repeats, predict_only=args.predict_only, ablations=parse_ablations(args.ablate),
        media=parse_kv(args.media), gen_kwargs=check_gen_kwargs(parse_kv(args.gen_kwargs)),
        command=["avhb", *argv[1:]] if argv and argv[0] == "run" else ["avhb", *argv], write_report=not args.no_report,
        include_paths=[str(Path(p).resolve()) for p in args.include_path], batch_size=args.batch_size, notes=notes,
        shard=Shard.parse(args.shard) if args.shard else None, executor=parse_executor(args.executor),
        seeds=args.seed, system_instruction=args.system_instruction, write_out=args.write_out,
        max_cost=args.max_cost, allow_config_change=args.allow_config_change,
        max_errors=args.max_errors, num_fewshot=args.num_fewshot, fewshot_as_multiturn=args.fewshot_as_multiturn,
        fewshot_seed=seeds[3])


def _sample_ids(text: str | None) -> list[str] | None:
    if text and text.lstrip().startswith("{"):
        raise UserError("--samples takes avhb sample ids (id1,id2,...); lm-eval's JSON of indices per task is not read")
    return [s for s in (text or "").split(",") if s] or None


def _default_run_name(tasks: str, model: str) -> str:
    import re

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{model}__{tasks}")[:80]
    return slug
