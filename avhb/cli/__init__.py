"""``avhb`` command line: one module per command (``run``, ``listing``,
``show``, ``validate``, ``score``, ``report``, ``merge``, ``export``,
``prepare``), each with its ``add_arguments`` and ``command``; the parser
and argument types they share (``parsing``); what every command prints
alike (``output``).  Rules and defaults live in the layer that owns them
(the run's options, the error budget, validation), not here: a command reads
its arguments, calls that layer, and turns the outcome into an exit status.

Listing and validation import no hooks, backends or torch (``avhb list
backends`` imports the backends' modules, for their arguments, not their
engines).  Exit codes: 0 done; 2 a user error (one line: a bad flag, task
file, data file or folder); 1 the environment failed the run (a full disk,
an unwritable folder; one line) or the run stopped early or finished over
its error budget (the results of what finished are written and printed
first); 130 interrupted (Ctrl-C); 128 + N stopped by signal N (143 SIGTERM,
138 SIGUSR1: what was in flight written, the lock released).  A reader that
closes stdout early (``avhb show X | head``) ends the command quietly (0).
Re-running the same command resumes."""
from __future__ import annotations

import argparse
import sys
from types import ModuleType

from avhb.cli import export, listing, merge, prepare, report, run, score, show, validate
from avhb.cli.output import one_line, print_results, stdout_closed
from avhb.cli.parsing import SUBCOMMANDS, Parser
from avhb.errors import EnvironmentFailure, Interrupted, RunStopped, UserError

COMMANDS: dict[str, ModuleType] = {"run": run, "list": listing, "show": show, "validate": validate, "score": score,
                                   "report": report, "prepare": prepare, "merge": merge, "export": export}
HELP = {
    "run": "run an evaluation (the default command)",
    "list": "list tasks, groups, models, metrics, filters, judges, backends or plugins",
    "show": "print a task's (or a group's) resolved configuration",
    "validate": "validate task YAML files (no code runs)",
    "score": "re-apply metrics and judges to a finished run, without model calls",
    "report": "rebuild report.html; with several runs, compare them",
    "merge": "combine the run folders of --shard I/N runs into one run",
    "export": "write a run folder in lm-eval's output shape (results and samples files)",
    "prepare": "fetch tasks' data ahead of a run",
}


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
    for name in ("run", "list", "show", "validate", "score", "report", "merge", "export", "prepare"):
        COMMANDS[name].add_arguments(sub.add_parser(name, help=HELP[name]))
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
        code = COMMANDS[args.command].command(args, argv)
        sys.stdout.flush()  # inside the try: a reader that went away (`| head`) is caught below
        return code
    except BrokenPipeError:
        return stdout_closed()
    except UserError as exc:
        print(f"avhb: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except RunStopped as exc:
        if exc.results:
            print_results(exc.results)
        print(f"avhb: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except EnvironmentFailure as exc:
        print(f"avhb: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except Interrupted as exc:  # SIGTERM, SIGUSR1 (avhb.process.interrupt)
        print(f"avhb: {one_line(exc)}", file=sys.stderr)
        return 128 + exc.signum
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
        code = int(registry.load("commands", argv[0])(argv[1:]) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return stdout_closed()
    except UserError as exc:
        print(f"avhb: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except EnvironmentFailure as exc:
        print(f"avhb: error: {one_line(exc)}", file=sys.stderr)
        return 1


__all__ = ["build_parser", "main", "print_results"]
