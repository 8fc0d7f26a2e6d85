"""``avhb`` command line.  Listing and validation import no hooks, backends
or torch; a user error prints one line and exits 2."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from avhb.errors import UserError

SUBCOMMANDS = ("run", "list", "show", "validate", "score", "report", "prepare", "merge")


def _run_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", required=True, help="comma-separated tasks, groups, tags or globs")
    p.add_argument("--model", default="local", help="BACKEND:NAME, e.g. vllm:Qwen3-VL, openai:gpt-4.1, local (default)")
    p.add_argument("--model-args", default=None, help="k=v,... passed to the backend")
    p.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                   help="bind a judge role (repeat for a panel; '*=SPEC' binds every role)")
    p.add_argument("--data", action="append", default=[], metavar="NAME=PATH",
                   help="point a benchmark, group or task at a local copy of its upstream release")
    p.add_argument("--sample-data", action="store_true", help="run on each task's bundled sample pack")
    p.add_argument("--output-dir", default=None, help="run folder (re-running the same command resumes it)")
    p.add_argument("--limit", type=int, default=None, help="first N samples per task")
    p.add_argument("--samples", default=None, help="comma-separated sample ids")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--repeats", type=int, default=None, help="override the tasks' repeats")
    p.add_argument("--predict-only", action="store_true", help="generate and log, no metrics or judges")
    p.add_argument("--ablate", default=None,
                   help="modality switches: no_audio,no_video,no_boxes,audio_as_transcript,text_only")
    p.add_argument("--media", default=None, metavar="k=v,...",
                   help="override the tasks' media block, e.g. frames=64 (frame sweeps) or fps=1,max_frames=128")
    p.add_argument("--gen-kwargs", default=None, metavar="k=v,...",
                   help="override generation settings, e.g. max_tokens=4096,temperature=0.3")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="run shard I of N (0-based) of every task's samples; combine with `avhb merge`")
    p.add_argument("--executor", default=None, metavar="local|ray[:ADDRESS][,workers=N]",
                   help="where backends run: this process (local, default) or a Ray cluster")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="avhb", description="Evaluate audio-visual and video language models.",
        epilog="`avhb --tasks T --model M ...` is `avhb run ...`. Plugins add commands (e.g. `avhb diagnose`): "
               "see `avhb list commands`.")
    sub = parser.add_subparsers(dest="command")
    _run_parser(sub.add_parser("run", help="run an evaluation (the default command)"))
    lp = sub.add_parser("list", help="list tasks, groups, models, metrics, filters, judges, backends or plugins")
    lp.add_argument("what", choices=["tasks", "groups", "models", "metrics", "filters", "judges", "backends", "commands",
                                     "plugins"])
    lp.add_argument("--json", action="store_true")
    sp = sub.add_parser("show", help="print a task's resolved configuration")
    sp.add_argument("task")
    vp = sub.add_parser("validate", help="validate task YAML files (no code runs)")
    vp.add_argument("paths", nargs="*", help="YAML files or folders (default: every installed task)")
    scp = sub.add_parser("score", help="re-apply metrics and judges to a finished run, without model calls")
    scp.add_argument("run_dir")
    scp.add_argument("--judge", action="append", default=[])
    scp.add_argument("--pool", nargs="*", default=None, help="other run folders pooled for cross-run metrics")
    rp = sub.add_parser("report", help="rebuild report.html; with several runs, compare them")
    rp.add_argument("run_dirs", nargs="+")
    rp.add_argument("--output", default=None, help="where to write the comparison (.html, .md or .csv)")
    mp = sub.add_parser("merge", help="combine the run folders of --shard I/N runs into one run")
    mp.add_argument("out", help="the merged run folder")
    mp.add_argument("shard_dirs", nargs="+", help="every shard's run folder")
    mp.add_argument("--no-report", action="store_true", help="skip report.html")
    pp = sub.add_parser("prepare", help="fetch tasks' data ahead of a run")
    pp.add_argument("tasks")
    pp.add_argument("--data-dir", default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        return _plugin_command(argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help"):
        argv = ["run", *argv]
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return 2
    try:
        return COMMANDS[args.command](args, argv)
    except UserError as exc:
        print(f"avhb: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("avhb: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def _plugin_command(argv: list[str]) -> int:
    """A subcommand a plugin registers (``avhb_commands``), e.g. ``diagnose``."""
    from avhb.registry import get_registry

    try:
        registry = get_registry()
        if argv[0] not in registry.entries.get("commands", {}):
            known = ", ".join(list(SUBCOMMANDS) + registry.names("commands"))
            raise UserError(f"unknown command {argv[0]!r} (commands: {known}; a run starts with --tasks)")
        return int(registry.load("commands", argv[0])(argv[1:]) or 0)
    except UserError as exc:
        print(f"avhb: error: {exc}", file=sys.stderr)
        return 2


def _cmd_run(args, argv) -> int:
    from avhb.model.backend import parse_backend_spec, parse_kv
    from avhb.data.sources import parse_data_flags
    from avhb.run.evaluator import evaluate
    from avhb.run.options import RunOptions
    from avhb.score.judges import parse_judge_bindings
    from avhb.run.options import parse_ablations
    from avhb.run.executor import parse_executor
    from avhb.run.shard import Shard

    if args.limit is not None and args.limit < 0:
        raise UserError(f"--limit {args.limit}: must be 0 or more")
    if args.repeats is not None and args.repeats < 1:
        raise UserError(f"--repeats {args.repeats}: must be 1 or more")
    spec = parse_backend_spec(args.model, args.model_args)
    output = Path(args.output_dir) if args.output_dir else Path("runs") / _default_run_name(args.tasks, spec.label)
    options = RunOptions(
        tasks=[t.strip() for t in args.tasks.split(",") if t.strip()], model=spec, output_dir=output,
        judges=parse_judge_bindings(args.judge), judge_args=list(args.judge), data=parse_data_flags(args.data), sample_data=args.sample_data,
        limit=args.limit, samples=[s for s in (args.samples or "").split(",") if s] or None, seed=args.seed,
        repeats=args.repeats, predict_only=args.predict_only, ablations=parse_ablations(args.ablate),
        media=_media_overrides(args.media), gen_kwargs=parse_kv(args.gen_kwargs),
        command=["avhb", *argv[1:]] if argv and argv[0] == "run" else ["avhb", *argv], write_report=not args.no_report,
        shard=Shard.parse(args.shard) if args.shard else None, executor=parse_executor(args.executor))
    results = evaluate(options)
    _print_results(results)
    print(f"\nrun folder: {output}", file=sys.stderr)
    return 0


def _media_overrides(text: str | None) -> dict:
    from avhb.model.backend import parse_kv

    overrides = parse_kv(text)
    if overrides:
        from avhb.media import MediaSpec

        MediaSpec.from_dict(overrides, where="--media")  # validates keys and types
        if "frames" in overrides:
            overrides.setdefault("fps", None)
        if "fps" in overrides and overrides["fps"] is not None:
            overrides.setdefault("frames", None)
    return overrides


def _default_run_name(tasks: str, model: str) -> str:
    import re

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{model}__{tasks}")[:80]
    return slug


def _print_results(results: dict) -> None:
    from avhb.report.table import format_results_table

    print(format_results_table(results))


def _cmd_list(args, argv) -> int:
    from avhb.registry import get_registry

    registry = get_registry()
    if args.what in ("tasks", "groups"):
        from avhb.taskdef.index import build_index

        index = build_index(registry)
        for err in index.errors:
            print(f"avhb: warning: {err}", file=sys.stderr)
        rows = index.tasks if args.what == "tasks" else index.groups
        if args.json:
            print(json.dumps(rows, indent=1))
        elif args.what == "tasks":
            out = [f"{name}\t{info['benchmark']}\t{','.join(info['tags'])}" for name, info in sorted(rows.items())]
            sys.stdout.write("\n".join(out) + ("\n" if out else ""))
        else:
            for name, info in sorted(rows.items()):
                print(f"{name}\t{len(index.group_members(name))} tasks")
        return 0
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
            print(f"{name}\t{preset.get('backend', '')}\t{preset.get('hub_id', '')}\t{preset.get('context', '')}")
        return 0
    for name in registry.names(args.what):
        print(f"{name}\t{registry.entries[args.what][name]}")
    return 0


def _cmd_show(args, argv) -> int:
    import yaml

    from avhb.taskdef.index import build_index, load_task

    task = load_task(build_index(), args.task)
    print(f"# {task.name} (from {task.file})")
    print(yaml.safe_dump(task.config, sort_keys=False, allow_unicode=True))
    return 0


def _cmd_validate(args, argv) -> int:
    from avhb.taskdef.index import build_index

    if not args.paths:
        index = build_index(use_cache=False)
        for err in index.errors:
            print(err)
        print(f"{len(index.tasks)} tasks, {len(index.groups)} groups, {len(index.errors)} errors")
        return 1 if index.errors else 0
    from avhb.taskdef.config import resolve_file

    files: list[Path] = []
    for p in map(Path, args.paths):
        files += sorted(p.rglob("*.yaml")) if p.is_dir() else [p]
    bad = 0
    for f in files:
        try:
            if f.name.startswith("_"):  # an include base: schema only
                from avhb.taskdef.config import load_with_includes

                load_with_includes(f)
            else:  # schema, includes, family expansion and hooks (read, never imported)
                resolve_file(f, f.parent, "pack", "")
        except UserError as exc:
            bad += 1
            print(exc)
    print(f"{len(files)} files, {bad} with errors")
    return 1 if bad else 0


def _cmd_score(args, argv) -> int:
    from avhb.run.evaluator import evaluate
    from avhb.run.options import options_from_run

    options = options_from_run(Path(args.run_dir), judge_args=args.judge)
    results = evaluate(options)
    _print_results(results)
    if args.pool:
        from avhb.score.pooling import pool_runs

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
    for d in dirs:
        if not (d / "results.json").is_file():
            raise UserError(f"{d}: no results.json (not a finished run folder)")
    if len(dirs) == 1 and not args.output:
        from avhb.report.html import write_report

        print(write_report(dirs[0]))
        return 0
    from avhb.report.compare import compare_runs, to_csv, to_markdown, write_html

    table = compare_runs(dirs)
    print(to_markdown(table))
    out = Path(args.output) if args.output else None
    if out is not None and out.suffix in (".csv", ".md"):
        out.write_text((to_csv if out.suffix == ".csv" else to_markdown)(table), encoding="utf-8")
    else:
        out = write_html(table, out)
    print(out, file=sys.stderr)
    return 0


def _cmd_merge(args, argv) -> int:
    from avhb.run.merge import merge

    results = merge(Path(args.out), [Path(d) for d in args.shard_dirs], command=["avhb", *argv],
                    write_report=not args.no_report)
    _print_results(results)
    print(f"\nmerged run folder: {args.out}", file=sys.stderr)
    return 0


def _cmd_prepare(args, argv) -> int:
    from avhb.data.prepare import prepare_tasks

    return prepare_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], args.data_dir)


COMMANDS = {"run": _cmd_run, "list": _cmd_list, "show": _cmd_show, "validate": _cmd_validate, "score": _cmd_score,
            "report": _cmd_report, "prepare": _cmd_prepare, "merge": _cmd_merge}

if __name__ == "__main__":
    sys.exit(main())
