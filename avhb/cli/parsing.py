"""The command line's parser: argparse whose unknown flag names the nearest
known one (or says it is lm-eval's and what avhb does instead), a flag under
both spellings (``--model-args``, lm-eval's ``--model_args``), and the
argument types the commands share."""
from __future__ import annotations

import argparse
import sys

from avhb.options import DEFAULT_SEED

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
            known = {f[2:]: f for f in long_flags(self)}  # compared without the dashes every flag shares
            close = difflib.get_close_matches(flag.lstrip("-"), sorted(known), n=1, cutoff=0.6)
            command = next((a for a in getattr(self, "_argv", None) or [] if a in SUBCOMMANDS), None)
            if flag in known.values() and command:  # another subcommand's flag: the nearest one is itself
                message = f"{flag} is not a flag of `{self.prog} {command}` (see `{self.prog} {command} --help`)"
            elif close:
                message = f"unknown flag {flag}; did you mean {known[close[0]]}?"
            else:
                message = f"unknown flag {flag} (see `{self.prog} --help`)"
        self.exit(2, f"avhb: error: {message}\n")  # one line, no usage block


def long_flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every long flag of a parser and its subcommands."""
    out = set()
    for action in parser._actions:
        out |= {o for o in action.option_strings if o.startswith("--")}
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= long_flags(sub)
    return out


def add_flag(p: argparse.ArgumentParser, name: str, *aliases: str, **kw) -> None:
    """A flag under its avhb spelling (``--model-args``), the same with
    underscores (``--model_args``, lm-eval's spelling) and any other alias."""
    spellings = [name] + (["--" + name[2:].replace("-", "_")] if "-" in name[2:] else []) + list(aliases)
    p.add_argument(*dict.fromkeys(spellings), **kw)


def limit_arg(text: str) -> float | int:
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


def count_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value


def truth_arg(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: true or false")


def batch_size_arg(text: str) -> int | str:
    if text == "auto" or text.startswith("auto:"):
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number or 'auto'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    return value


def seeds_arg(text: str) -> tuple[int | None, ...]:
    """``--seed``: one integer (every seed), or lm-eval's comma form
    ``python,numpy,torch,fewshot`` with ``None`` for a seed left unset (three
    values: the few-shot seed defaults to DEFAULT_SEED, as in lm-eval)."""
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
        return (*values, DEFAULT_SEED)
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"{text!r}: one seed, or four (python,numpy,torch,fewshot)")
    return tuple(values)


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
