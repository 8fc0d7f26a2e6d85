"""``avhb`` command line.  Listing and validation import no hooks, backends
or torch (``avhb list backends`` imports the backends' modules, for their
arguments, not their engines).  Exit codes: 0 done; 2 a user error (one line: a bad flag, task
file, data file or folder); 1 the environment failed the run (a full disk,
an unwritable folder; one line) or the run stopped early or finished over
its error budget (the results of what finished are written and printed
first); 130 interrupted (Ctrl-C); 128 + N stopped by signal N (143 SIGTERM,
138 SIGUSR1: what was in flight written, the lock released).  A reader that
closes stdout early (``avhb show X | head``) ends the command quietly (0).
Re-running the same command resumes."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from avhb.errors import EnvironmentFailure, Interrupted, RunStopped, UserError

SUBCOMMANDS = ("run", "list", "show", "validate", "score", "report", "prepare", "merge", "export")


class Parser(argparse.ArgumentParser):
    """argparse, plus: an unknown flag names the nearest known one."""

    def parse_args(self, args=None, namespace=None):
        self._argv = list(args) if args is not None else sys.argv[1:]  # for error(): the subcommand asked for
        return super().parse_args(args, namespace)

    def error(self, message: str):
        import difflib
        import re

        m = re.search(r"unrecognized arguments: (\S+)", message)
        if m and m.group(1).startswith("-") and m.group(1).split("=", 1)[0] in LM_EVAL_ONLY:
            flag = m.group(1).split("=", 1)[0]
            message = f"{flag} is lm-eval's; avhb has no such flag: {LM_EVAL_ONLY[flag]}"
        elif m and m.group(1).startswith("-"):
            flag = m.group(1).split("=", 1)[0]
            known = {f[2:]: f for f in _flags(self)}  # compared without the dashes every flag shares
            close = difflib.get_close_matches(flag.lstrip("-"), sorted(known), n=1, cutoff=0.6)
            command = next((a for a in getattr(self, "_argv", None) or [] if a in SUBCOMMANDS), None)
            if flag in known.values() and command:  # another subcommand's flag: the nearest one is itself
                message = f"{flag} is not a flag of `{self.prog} {command}` (see `{self.prog} {command} --help`)"
            elif close:
                message = f"unknown flag {flag}; did you mean {known[close[0]]}?"
            else:
                message = f"unknown flag {flag} (see `{self.prog} --help`)"
        self.exit(2, f"avhb: error: {message}\n")  # one line, no usage block


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every long flag of a parser and its subcommands."""
    out = set()
    for action in parser._actions:
        out |= {o for o in action.option_strings if o.startswith("--")}
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _flags(sub)
    return out


def _flag(p: argparse.ArgumentParser, name: str, *aliases: str, **kw) -> None:
    """A flag under its avhb spelling (``--model-args``), the same with
    underscores (``--model_args``, lm-eval's spelling) and any other alias."""
    spellings = [name] + (["--" + name[2:].replace("-", "_")] if "-" in name[2:] else []) + list(aliases)
    p.add_argument(*dict.fromkeys(spellings), **kw)


def _limit(text: str) -> float | int:
    """``--limit 10`` (samples per task) or ``--limit 0.1`` (that fraction of
    each task, rounded up, as lm-eval reads it)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value.is_integer() and "." not in text:
        return int(value)
    if value >= 1 or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: a fraction must be below 1 (a count is a whole number)")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value


def _truth(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: true or false")


def _batch_size(text: str) -> int | str:
    if text == "auto" or text.startswith("auto:"):
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number or 'auto'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    return value


def _run_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", "-t", nargs="+", default=None,
                   help="comma-separated tasks, groups, tags or globs ('list', 'list_groups', 'list_tags': list them)")
    p.add_argument("--model", "-M", default="local",
                   help="BACKEND:NAME[,k=v...], e.g. vllm:Qwen3-VL, openai:gpt-4.1, local (default); a known "
                        "model takes what its preset says (`avhb list models`); another gets audio as a "
                        "transcript unless its spec says audio=true (openai:NAME,audio=true); each backend's "
                        "arguments: `avhb list backends`")
    _flag(p, "--model-args", "-a", default=None,
          help="k=v,... passed to the backend, e.g. audio=true (the model hears audio, else it gets a "
               "transcript), video=true, images_per_request=8; `avhb list backends NAME` lists them")
    p.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                   help="bind a judge role (repeat for a panel; '*=SPEC' binds every role); a judge that "
                        "should hear a role's audio takes audio=true like --model (`avhb list judges`, "
                        "`avhb list backends`)")
    p.add_argument("--data", action="append", default=[], metavar="NAME=PATH",
                   help="point a benchmark, group or task at a local copy of its upstream release")
    _flag(p, "--sample-data", action="store_true", help="run on each task's bundled sample pack")
    _flag(p, "--output-dir", dest="output_dir", default=None,
          help="run folder (re-running the same command resumes it)")
    p.add_argument("--limit", "-L", type=_limit, default=None, help="first N samples per task, or a fraction (0.1)")
    p.add_argument("--samples", default=None, help="comma-separated sample ids")
    p.add_argument("--seed", type=_seeds, default=None, metavar="S|PY,NUMPY,TORCH,FEWSHOT",
                   help="the seed (default 1234), or lm-eval's four: python, numpy, torch (the model's sampling "
                        "seed), few-shot; 'None' leaves one unset")
    p.add_argument("--repeats", type=int, default=None, help="override the tasks' repeats")
    _flag(p, "--predict-only", "-x", action="store_true", help="generate and log, no metrics or judges")
    p.add_argument("--ablate", default=None,
                   help="modality switches: no_audio,no_video,no_boxes,audio_as_transcript,text_only")
    p.add_argument("--media", default=None, metavar="k=v,...",
                   help="override the tasks' media block, e.g. frames=64 (frame sweeps) or fps=1,max_frames=128")
    _flag(p, "--gen-kwargs", default=None, metavar="k=v,...",
          help="override generation settings, e.g. max_tokens=4096,temperature=0.3")
    _flag(p, "--no-report", action="store_true", help="skip report.html")
    _flag(p, "--max-errors", default="5%", metavar="SHARE",
          help="error budget: exit 1 when more samples than this failed outside the model (e.g. 5%% or "
               "0.05, default 5%%); they are excluded from the metrics and retried by re-running")
    _flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR",
          help="also load task YAML and hooks from DIR (tasks named DIR's-name/task)")
    _flag(p, "--batch-size", "-b", type=_batch_size, default=None, metavar="N",
          help="at most N requests in flight (the backend's concurrency); 'auto' keeps the backend's")
    _flag(p, "--log-samples", "-s", action="store_true", help="accepted for lm-eval users: samples are always logged")
    _flag(p, "--apply-chat-template", nargs="?", const=True, default=None, metavar="NAME",
          help="accepted for lm-eval users: chat templates are always applied where the backend has one")

    # lm-eval's few-shot flags (issue 24; other lm-eval flags are added elsewhere)
    _flag(p, "--num-fewshot", "-f", type=_count, default=None, metavar="N",
          help="few-shot examples per sample, over each task's num_fewshot (a task that sets 0 keeps 0, as lm-eval)")
    _flag(p, "--fewshot-as-multiturn", type=_truth, nargs="?", const=True, default=True, metavar="true|false",
          help="few-shot examples as turns of their own (default, as lm-eval with a chat template), or with "
               "'false' all in the one user message")

    _flag(p, "--shard", default=None, metavar="I/N",
          help="run shard I of N (0-based) of every task's samples; combine with `avhb merge`")
    _flag(p, "--executor", default=None, metavar="local|ray[:ADDRESS][,workers=N]",
          help="where backends run: this process (local, default) or a Ray cluster")
    _flag(p, "--max-cost", type=float, default=None, metavar="USD",
          help="refuse to start when the estimated cost is above USD (or unknown); stop sending once it is spent")
    _flag(p, "--allow-config-change", action="store_true",
          help="run settings that change the model's calls (model, --gen-kwargs, --media, --ablate, data, seed...) "
               "in an existing --output-dir; its finished results are kept in previous/")
    _lm_eval_flags(p)


def _lm_eval_flags(p: argparse.ArgumentParser) -> None:
    """lm-eval 0.4.13's run flags under their own spellings (issue 24).  Each
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


VERBOSITY = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# lm-eval 0.4.13 run flags avhb does not take: why, and what to use instead (never another flag's name as a guess)
LM_EVAL_ONLY = {
    "--config": "avhb takes its settings as flags; a YAML of lm-eval flags is not read",
    "-C": "avhb takes its settings as flags; a YAML of lm-eval flags is not read",
    "--device": "the backend places the model (vllm: tensor_parallel_size=... in --model-args)",
    "--max_batch_size": "--batch_size N sets the requests in flight; there is no auto-tuning ceiling",
    "--cache_requests": "requests are built per run; the journal caches the answers (re-run the command)",
    "--check_integrity": "run `avhb validate` to check task files",
    "--trust_remote_code": "avhb never runs dataset loading scripts; `avhb prepare` fetches data files",
    "--confirm_run_unsafe_code": "avhb runs no generated code",
    "--metadata": "task metadata comes from the task's YAML",
    "--trackio_args": "avhb logs to Weights & Biases (--wandb_args), not Trackio",
    "-E": "avhb's --samples takes sample ids (id1,id2), not lm-eval's JSON of indices",
}


def _seeds(text: str) -> tuple[int | None, ...]:
    """``--seed``: one integer (every seed), or lm-eval's comma form
    ``python,numpy,torch,fewshot`` with ``None`` for a seed left unset (three
    values: the few-shot seed defaults to 1234, as in lm-eval)."""
    items = [t.strip() for t in text.split(",")]
    values: list[int | None] = []
    for item in items:
        if item.lower() == "none":
            values.append(None)
            continue
        try:
            values.append(int(item))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: an integer, or four integers or None (lm-eval's "
                                             "python,numpy,torch,fewshot)") from None
    if len(values) == 1:
        return tuple(values * 4)
    if len(values) == 3:
        return (*values, 1234)
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"{text!r}: one seed, or four (python,numpy,torch,fewshot)")
    return tuple(values)


def _version() -> str:
    from avhb.version import __version__

    return f"avhb {__version__} (python {sys.version.split()[0]})"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="avhb", description="Evaluate audio-visual and video language models.",
        epilog="`avhb --tasks T --model M ...` is `avhb run ...`. Plugins add commands (e.g. `avhb diagnose`): "
               "see `avhb list commands`. lm-eval's spellings (--model_args, --output_path, --include_path...) "
               "are accepted.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    _run_parser(sub.add_parser("run", help="run an evaluation (the default command)"))
    lp = sub.add_parser("list", help="list tasks, groups, models, metrics, filters, judges, backends or plugins")
    lp.add_argument("what", nargs="?", choices=LISTABLE, help="what to list (alone: each kind with its count)")
    lp.add_argument("names", nargs="*", metavar="NAME",
                    help="backends only: just these (each with its arguments, one line each)")
    lp.add_argument("--json", action="store_true")
    _flag(lp, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
    sp = sub.add_parser("show", help="print a task's (or a group's) resolved configuration")
    sp.add_argument("task")
    _flag(sp, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
    vp = sub.add_parser("validate", help="validate task YAML files (no code runs)")
    vp.add_argument("paths", nargs="*", help="YAML files or folders (default: every installed task)")
    _flag(vp, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
    scp = sub.add_parser("score", help="re-apply metrics and judges to a finished run, without model calls")
    scp.add_argument("run_dir")
    scp.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                     help="re-score with this judge bound to role ROLE (repeat for a panel; '*=SPEC' binds "
                          "every role); given, these replace the run's own --judge flags. Verdicts the run's "
                          "journal holds are reused, others asked; the model is not called")
    scp.add_argument("--pool", nargs="*", default=None, help="other run folders pooled for cross-run metrics")
    scp.add_argument("--no-report", action="store_true", help="skip report.html")
    rp = sub.add_parser("report", help="rebuild report.html; with several runs, compare them")
    rp.add_argument("run_dirs", nargs="+")
    rp.add_argument("--output", default=None,
                    help="where to write the comparison (.html, .md, .csv, or .json: the comparison document)")
    rp.add_argument("--baseline", default=None, metavar="RUN_OR_FILE",
                    help="what the runs are tested against (lmms-eval's flag): a run folder (default: the first run), "
                         "or an lmms-eval samples file (<date>_samples_<task>.jsonl)")
    mp = sub.add_parser("merge", help="combine the run folders of --shard I/N runs into one run")
    mp.add_argument("out", help="the merged run folder")
    mp.add_argument("shard_dirs", nargs="+", help="every shard's run folder")
    mp.add_argument("--no-report", action="store_true", help="skip report.html")
    ep = sub.add_parser("export", help="write a run folder in lm-eval's output shape (results and samples files)")
    ep.add_argument("run_dir")
    ep.add_argument("--format", choices=["lm-eval"], default="lm-eval")
    ep.add_argument("--output", default=None, metavar="DIR",
                    help="where (default: inside the run folder, replacing its earlier export); DIR/<model>/...")
    _flag(mp, "--max-errors", default=None, metavar="SHARE",
          help="error budget of the merged run (default: the one the shards ran under)")
    pp = sub.add_parser("prepare", help="fetch tasks' data ahead of a run")
    pp.add_argument("tasks")
    _flag(pp, "--data-dir", default=None)
    _flag(pp, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        return _plugin_command(argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv = ["run", *argv]
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return 2
    try:
        for folder in getattr(args, "include_path", None) or []:
            from avhb.taskdef.include_path import add_include_path

            add_include_path(folder)
        code = COMMANDS[args.command](args, argv)
        sys.stdout.flush()  # inside the try: a reader that went away (`| head`) is caught below
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except UserError as exc:
        print(f"avhb: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except RunStopped as exc:
        if exc.results:
            _print_results(exc.results)
        print(f"avhb: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except EnvironmentFailure as exc:
        print(f"avhb: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Interrupted as exc:  # SIGTERM, SIGUSR1 (avhb.run.interrupt)
        print(f"avhb: {_one_line(exc)}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("avhb: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def _stdout_closed() -> int:
    """The reader of stdout went away (``avhb show X | head``): stop quietly.
    Later writes (the interpreter's flush at exit) go to /dev/null instead of
    raising ``BrokenPipeError`` again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


def _one_line(exc: BaseException) -> str:
    from avhb.redact import redact_text

    return " ".join(redact_text(str(exc)).split())


def _plugin_command(argv: list[str]) -> int:
    """A subcommand a plugin registers (``avhb_commands``), e.g. ``diagnose``."""
    from avhb.registry import get_registry

    try:
        registry = get_registry()
        if argv[0] not in registry.entries.get("commands", {}):
            known = ", ".join(list(SUBCOMMANDS) + registry.names("commands"))
            raise UserError(f"unknown command {argv[0]!r} (commands: {known}; a run starts with --tasks)")
        code = int(registry.load("commands", argv[0])(argv[1:]) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except UserError as exc:
        print(f"avhb: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except EnvironmentFailure as exc:
        print(f"avhb: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _cmd_run(args, argv) -> int:
    from avhb.report.publish import Publishing
    from avhb.run.lmeval_flags import lm_eval_notes, seed_globals
    from avhb.model.backend import parse_backend_spec, parse_kv
    from avhb.data.sources import parse_data_flags
    from avhb.api import evaluate
    from avhb.run.options import RunOptions
    from avhb.score.judges import parse_judge_bindings
    from avhb.run.budget import OverBudget
    from avhb.run.options import check_gen_kwargs, parse_ablations
    from avhb.cluster.executor import parse_executor
    from avhb.cluster.shard import Shard

    if not args.tasks:
        raise UserError("--tasks is required (comma-separated tasks, groups or tags; `avhb list tasks` names them)")
    tasks = ",".join(args.tasks)  # lm-eval also takes them space-separated
    listing = {"list": "tasks", "list_groups": "groups", "list_tags": "tags", "list_subtasks": "tasks"}
    if tasks in listing:  # lm-eval's --tasks list (avhb list tasks|groups|tags)
        return _list_index(listing[tasks])
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
    seeds = args.seed or (None, None, 1234, 1234)
    seed = 1234 if seeds[2] is None else seeds[2]
    options = RunOptions(
        tasks=[t.strip() for t in tasks.split(",") if t.strip()], model=spec, output_dir=output,
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
    seed_globals(seeds)
    over = None
    try:
        results = evaluate(options)
    except OverBudget as exc:  # the run's outcome (avhb.run.budget): published as any finished run, then exit 1
        results, over = exc.results, str(exc)
    _print_results(results, output)
    print(f"\nrun folder: {output}", file=sys.stderr)
    publish.after_run(output, lm_eval_files=args.output_path is not None, show_config=args.show_config)
    if over:
        print(f"avhb: error: {over}", file=sys.stderr)
        return 1
    return 0


def _sample_ids(text: str | None) -> list[str] | None:
    if text and text.lstrip().startswith("{"):
        raise UserError("--samples takes avhb sample ids (id1,id2,...); lm-eval's JSON of indices per task is not read")
    return [s for s in (text or "").split(",") if s] or None


def _default_run_name(tasks: str, model: str) -> str:
    import re

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{model}__{tasks}")[:80]
    return slug


def _print_results(results: dict, run_dir: Path | None = None) -> None:
    """The results table, with the run's notes (run.json) under it."""
    from avhb.report.table import format_results_table

    notes = []
    if run_dir is not None and (run_dir / "run.json").is_file():
        try:
            notes = list(json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("notes") or [])
        except (OSError, ValueError, AttributeError):
            notes = []
    print(format_results_table(results, notes))
    from avhb.run.results import RunResults

    for line in RunResults.from_json(results).undefined_headlines():
        print(f"avhb: warning: {line}", file=sys.stderr)


LISTABLE = ("tasks", "groups", "tags", "models", "metrics", "filters", "judges", "backends", "commands", "plugins")


def _cmd_list(args, argv) -> int:
    from avhb.registry import get_registry

    registry = get_registry()
    if args.names and args.what != "backends":
        raise UserError(f"avhb list {args.what or ''} takes no names (only `avhb list backends NAME...` does)")
    if args.what is None:  # what can be listed, and how many of each
        return _list_kinds(registry)
    if args.what in ("tasks", "groups", "tags"):
        return _list_index(args.what, registry, args.json)
    if args.what == "plugins":
        for p in registry.plugins:
            kind = "built-in" if p.builtin else "third-party"
            print(f"{p.name}\t{p.distribution} {p.version}\t{kind}\t{p.module}")
            for what, names in sorted(p.provides.items()):
                print(f"    {what}: {', '.join(names) if names else '-'}")
        for name in registry.failed:
            print(f"{name}\tFAILED TO LOAD")
        return 0
    if args.what == "models":
        from avhb.model.presets import load_presets

        for name, preset in sorted(load_presets(registry).items()):
            print(f"{name}\t{preset.get('backend', '')}\t{preset.get('hub_id', '')}\t{preset.get('context', '')}"
                  f"\t{_takes(preset)}")
        return 0
    if args.what == "judges":
        return _list_judges(registry)
    if args.what == "backends":
        return _list_backends(registry, args.names, args.json)
    for name in registry.names(args.what):
        print(f"{name}\t{registry.entries[args.what][name]}")
    return 0


def _takes(preset: dict) -> str:
    """What a preset says its model takes besides text (``avhb list
    models``' last column): ``takes images 64, video, audio``."""
    caps = preset.get("capabilities") or {}
    kinds = [f"images {caps['images']}" if caps.get("images") else "",
             "video" if caps.get("video") else "", "audio" if caps.get("audio") else ""]
    return "takes " + (", ".join(k for k in kinds if k) or "text only")


def _list_backends(registry, names: list[str], as_json: bool) -> int:
    """``avhb list backends [NAME...]``: each backend's ``name<TAB>import
    path``, then its arguments, one indented line each (name, type and
    default, what it does: :mod:`avhb.model.backend_reference`).  Loading
    a backend's class imports its module, not its engine."""
    from avhb.model.backend_reference import argument_lines, as_json as arguments_json

    for name in names:
        registry.path("backends", name)  # an unknown name: one line naming the known ones
    out: dict[str, dict] = {}
    for name in names or registry.names("backends"):
        path = registry.entries["backends"][name]
        try:
            cls = registry.load("backends", name)
        except Exception as exc:  # a plugin backend that cannot be imported here
            lines, declared = [f"(cannot load: {type(exc).__name__}: {exc})".splitlines()[0]], None
        else:
            lines, declared = argument_lines(cls), arguments_json(cls)
        if as_json:
            out[name] = {"path": path, "arguments": declared}
            continue
        print(f"{name}\t{path}")
        for line in lines:
            print(f"    {line}")
    if as_json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


def _tags(index) -> dict[str, list[str]]:
    """tag -> the tasks carrying it (from the task index)."""
    tags: dict[str, list[str]] = {}
    for name, info in sorted(index.tasks.items()):
        for tag in info.get("tags") or []:
            tags.setdefault(tag, []).append(name)
    return tags


def _list_index(what: str, registry=None, as_json: bool = False) -> int:
    """``avhb list tasks|groups|tags`` (also lm-eval's ``--tasks list``,
    ``list_groups``, ``list_tags``): one line each, from the task index."""
    from avhb.taskdef.index import build_index

    index = build_index(registry)
    for err in index.errors:
        print(f"avhb: warning: {err}", file=sys.stderr)
    if what == "tags":
        tags = _tags(index)
        if as_json:
            print(json.dumps(tags, indent=1))
        else:
            out = [f"{tag}\t{len(tasks)} tasks" for tag, tasks in sorted(tags.items())]
            sys.stdout.write("\n".join(out) + ("\n" if out else ""))
        return 0
    rows = index.tasks if what == "tasks" else index.groups
    if as_json:
        print(json.dumps(rows, indent=1))
    elif what == "tasks":
        out = [f"{name}\t{info['benchmark']}\t{','.join(info['tags'])}" for name, info in sorted(rows.items())]
        sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    else:
        for name, info in sorted(rows.items()):
            print(f"{name}\t{len(index.group_members(name))} tasks")
    return 0


def _list_kinds(registry) -> int:
    """``avhb list`` alone: each kind ``avhb list WHAT`` takes, with its count."""
    from avhb.taskdef.index import build_index

    index = build_index(registry)
    from avhb.model.presets import load_presets

    counts = {"tasks": len(index.tasks), "groups": len(index.groups), "tags": len(_tags(index)),
              "models": len(load_presets(registry)), "plugins": len(registry.plugins),
              # what can fill --judge ROLE=...: the judge kinds plugins add, and any backend
              "judges": len(registry.names("judges")) + len(registry.names("backends"))}
    for what in LISTABLE:
        n = counts[what] if what in counts else len(registry.names(what))
        print(f"avhb list {what}\t{n}")
    return 0


def _list_judges(registry) -> int:
    """Judge kinds from plugins, the fact that any backend judges, the roles
    the installed tasks declare, and the reply parsers."""
    from avhb.score.parsers import parser_names
    from avhb.taskdef.index import build_index

    kinds = registry.names("judges")
    if kinds:  # one "name<TAB>import path" line each, as for every other kind
        for name in kinds:
            print(f"{name}\t{registry.entries['judges'][name]}")
    else:
        print("no judge plugins installed; any backend can judge")
    print(f"any backend judges a role: --judge ROLE=BACKEND[:NAME] (backends: {', '.join(registry.names('backends'))})")
    roles: dict[str, list[str]] = {}
    for task, info in build_index(registry).tasks.items():
        for role in info.get("judges") or []:
            roles.setdefault(role, []).append(task)
    if roles:
        print("roles the installed tasks declare:")
        for role, tasks in sorted(roles.items()):
            shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
            print(f"  {role}\t{len(tasks)} tasks ({shown})")
    print(f"reply parsers: {', '.join(parser_names())}")
    return 0


def _cmd_show(args, argv) -> int:
    import yaml

    from avhb.taskdef.index import build_index, load_task

    index = build_index()
    if args.task in index.groups and args.task not in index.tasks:
        info = index.groups[args.task]
        members = index.group_members(args.task)
        print(f"# group {args.task} (from {info['file']})")
        print(yaml.safe_dump({"group": args.task, "task": list(info["tasks"]), "aggregate_metric_list": info["aggregate"],
                              "resolved_tasks": members}, sort_keys=False, allow_unicode=True))
        return 0
    task = load_task(index, args.task)
    print(f"# {task.name} (from {task.file})")
    print(yaml.safe_dump(task.config, sort_keys=False, allow_unicode=True))
    return 0


def _cmd_validate(args, argv) -> int:
    """Every error of every file, one line each, then the notes (avhb/run/validate.py)."""
    from avhb.registry import get_registry
    from avhb.run.validate import validate_installed, validate_paths

    registry = get_registry()
    result = validate_paths([Path(p) for p in args.paths], registry) if args.paths else validate_installed(registry)
    for line in result.errors + result.notes:
        print(line)
    print(result.summary(installed=not args.paths))
    return 0 if result.ok else 1


def _cmd_score(args, argv) -> int:
    from avhb.api import evaluate
    from avhb.cluster.shard import Shard
    from avhb.run.options import options_from_run

    options = options_from_run(Path(args.run_dir), judge_args=args.judge, shard_from_json=Shard.from_json)
    options.write_report = not args.no_report
    results = evaluate(options)
    _print_results(results, Path(args.run_dir))
    if args.pool:
        from avhb.report.pooling import pool_runs

        pooled = pool_runs([Path(args.run_dir), *map(Path, args.pool)])
        for task, cells in pooled["results"].items():
            for label, values in cells.items():
                shown = ", ".join(f"{k} {v:.4f}" for k, v in values.items()
                                  if isinstance(v, float) and not k.endswith(("_stderr", "_n")))
                print(f"pooled {task} | {label} | {shown}")
        print(f"{args.run_dir}/pooled.json", file=sys.stderr)
    return 0


def _cmd_report(args, argv) -> int:
    dirs = [Path(d) for d in args.run_dirs]
    baseline, lmms = 0, None
    if args.baseline is not None:
        given = Path(args.baseline)
        if given.is_dir():
            same = [i for i, d in enumerate(dirs) if d.resolve() == given.resolve()]
            if same:
                baseline = same[0]
            else:
                dirs.insert(0, given)
        elif given.is_file():
            lmms = given
        else:
            raise UserError(f"--baseline {given}: no such run folder or file")
    for d in dirs:
        if not (d / "results.json").is_file():
            raise UserError(f"{d}: no results.json (not a finished run folder)")
    if len(dirs) == 1 and not args.output and lmms is None:
        from avhb.report.html import write_report

        print(write_report(dirs[0]))
        return 0
    from avhb.report.compare import compare_runs, to_csv, to_markdown, write_comparison, write_html

    table = compare_runs(dirs, baseline, lmms_baseline=lmms)
    print(to_markdown(table))
    out = Path(args.output) if args.output else None
    if out is not None and out.suffix in (".csv", ".md"):
        out.write_text((to_csv if out.suffix == ".csv" else to_markdown)(table), encoding="utf-8")
    elif out is not None and out.suffix == ".json":
        write_comparison(table, out)
    else:
        out = write_html(table, out)
    print(out, file=sys.stderr)
    return 0


def _cmd_merge(args, argv) -> int:
    from avhb.cluster.merge import merge
    from avhb.run.budget import over_budget
    from avhb.run.options import read_manifest

    report: Callable[[Path], object] | None = None
    if not args.no_report:
        from avhb.report.html import write_report as report
    results = merge(Path(args.out), [Path(d) for d in args.shard_dirs], command=["avhb", *argv],
                    report=report, max_errors=args.max_errors)
    _print_results(results, Path(args.out))
    print(f"\nmerged run folder: {args.out}", file=sys.stderr)
    flag = read_manifest(Path(args.out))["max_errors"]  # the shards' budget, applied to the merged counts
    over = over_budget(results, flag)
    if over:
        print(f"avhb: error: {over}", file=sys.stderr)
        return 1
    return 0


def _cmd_export(args, argv) -> int:
    from avhb.report.lmeval import export_run

    for path in export_run(Path(args.run_dir), Path(args.output) if args.output else None):
        print(path)
    return 0


def _cmd_prepare(args, argv) -> int:
    from avhb.run.prepare import prepare_tasks

    return prepare_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], args.data_dir)


COMMANDS = {"run": _cmd_run, "list": _cmd_list, "show": _cmd_show, "validate": _cmd_validate, "score": _cmd_score,
            "report": _cmd_report, "prepare": _cmd_prepare, "merge": _cmd_merge, "export": _cmd_export}

if __name__ == "__main__":
    sys.exit(main())
