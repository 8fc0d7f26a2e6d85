"""How many of the task files lm-eval and lmms-eval ship does ``avhb validate`` accept?

Runs avhb's own validator (``avhb validate FILE``, in this process, its output
captured) over every task file of each top-level folder of a peer's
``tasks/`` package, unmodified, and prints one table per peer: files, loaded,
refused (grouped by reason), tracebacks.  Validation runs no task code, so the
folders can come from the peers' venvs (``scripts/peer_envs.sh``) or from
their wheels unpacked (``pip download --no-deps lm-eval==0.4.13`` and unzip).

    python scripts/peer_task_survey.py                    # the venvs' folders
    python scripts/peer_task_survey.py --lm-eval DIR --lmms DIR --json out.json
    python scripts/peer_task_survey.py --folders gsm8k,mmlu  # only these top-level folders

A file is *loaded* when ``avhb validate FILE`` exits 0 (notes allowed), *refused*
when it exits 1 with its messages, a *traceback* when the validator raised.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import io
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _default(package: str, venv: str) -> Path | None:
    hits = sorted(glob.glob(str(ROOT / venv / "lib" / "python3*" / "site-packages" / package / "tasks")))
    return Path(hits[-1]) if hits else None


def task_files(folder: Path) -> list[Path]:
    """What ``avhb validate DIR`` reads: every ``*.yaml`` and ``*.yml`` under the folder."""
    if folder.is_file():
        return [folder]
    return sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")])


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+\b")


def reason_of(line: str) -> str:
    """An error line without its file, line and values: the reason it names."""
    text = line.strip()
    match = re.match(r"^(?:avhb: error: )?/?\S+?:\d+: (.*)$", text)
    if match:
        text = match.group(1)
    text = _QUOTED.sub("'…'", text)
    text = _NUMBER.sub("N", text)
    text = re.sub(r"\(and N more; see `avhb validate FILE`\)", "", text)
    return text.strip()[:160]


def validate_one(main, path: Path) -> tuple[str, list[str]]:
    """("loaded" | "refused" | "traceback", the lines it printed or the traceback's last line)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["validate", str(path)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # the validator itself failed: what the table counts as a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return "traceback", [f"{type(exc).__name__}: {str(exc)[:120]} ({Path(frame.filename).name}:{frame.lineno})"]
    lines = [line for line in (out.getvalue() + err.getvalue()).splitlines() if line.strip()]
    if code == 0:
        return "loaded", lines
    errors = [line for line in lines if not re.match(r"^\d+ files, ", line) and not line.startswith("note:")
              and ": note: " not in line]
    return "refused", errors or lines


def survey(name: str, tasks_dir: Path, only: set[str] | None) -> dict:
    from avhb.cli import main

    folders = sorted(p for p in tasks_dir.iterdir() if not p.name.startswith((".", "__")) and
                     (p.is_dir() or p.suffix in (".yaml", ".yml")))
    if only:
        folders = [f for f in folders if f.name in only]
    outcome: collections.Counter = collections.Counter()
    first_reason: collections.Counter = collections.Counter()
    any_reason: collections.Counter = collections.Counter()
    tracebacks: collections.Counter = collections.Counter()
    examples: dict[str, str] = {}
    per_folder: dict[str, dict[str, int]] = {}
    start = time.perf_counter()
    for folder in folders:
        counts: collections.Counter = collections.Counter()
        for path in task_files(folder):
            kind, lines = validate_one(main, path)
            counts[kind] += 1
            outcome[kind] += 1
            if kind == "refused":
                reasons = [reason_of(line) for line in lines] or ["(no message)"]
                first_reason[reasons[0]] += 1
                for reason in set(reasons):
                    any_reason[reason] += 1
                    examples.setdefault(reason, f"{path.relative_to(tasks_dir)}: {lines[0][:200]}" if lines else "")
            elif kind == "traceback":
                tracebacks[lines[0]] += 1
                examples.setdefault(lines[0], str(path.relative_to(tasks_dir)))
        per_folder[folder.name] = dict(counts)
    files = sum(outcome.values())
    return {"peer": name, "tasks_dir": str(tasks_dir), "folders": len(folders), "files": files,
            "loaded": outcome["loaded"], "refused": outcome["refused"], "tracebacks": outcome["traceback"],
            "loaded_pct": round(100 * outcome["loaded"] / files, 2) if files else 0.0,
            "seconds": round(time.perf_counter() - start, 1),
            "refused_by_first_reason": first_reason.most_common(),
            "refused_by_any_reason": any_reason.most_common(),
            "traceback_kinds": tracebacks.most_common(), "examples": examples, "per_folder": per_folder}


def print_table(result: dict, top: int) -> None:
    print(f"\n## {result['peer']} ({result['tasks_dir']})\n")
    print("| folders | files | loaded | refused | tracebacks | loaded % | seconds |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {result['folders']} | {result['files']} | {result['loaded']} | {result['refused']} | "
          f"{result['tracebacks']} | {result['loaded_pct']} | {result['seconds']} |")
    if result["refused_by_first_reason"]:
        print("\n| files refused | first reason (values elided) | example |")
        print("|---|---|---|")
        for reason, count in result["refused_by_first_reason"][:top]:
            example = result["examples"].get(reason, "").replace("|", "\\|")
            print(f"| {count} | {reason.replace('|', chr(92) + '|')} | {example[:140]} |")
    if result["traceback_kinds"]:
        print("\n| tracebacks | exception | first file |")
        print("|---|---|---|")
        for kind, count in result["traceback_kinds"][:top]:
            print(f"| {count} | {kind.replace('|', chr(92) + '|')} | {result['examples'].get(kind, '')} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm-eval", type=Path, default=_default("lm_eval", ".venv-lmeval"),
                        help="lm-eval's tasks/ folder (default: .venv-lmeval's)")
    parser.add_argument("--lmms", type=Path, default=_default("lmms_eval", ".venv-lmms"),
                        help="lmms-eval's tasks/ folder (default: .venv-lmms's)")
    parser.add_argument("--folders", default="", help="comma-separated top-level folders (default: all)")
    parser.add_argument("--top", type=int, default=25, help="reasons shown per table")
    parser.add_argument("--json", type=Path, help="write the whole survey here")
    args = parser.parse_args(argv)
    os.environ.setdefault("AVHB_NO_PROGRESS", "1")
    only = {f.strip() for f in args.folders.split(",") if f.strip()} or None
    results = []
    for name, folder in (("lm-eval", args.lm_eval), ("lmms-eval", args.lmms)):
        if folder is None or not folder.is_dir():
            print(f"{name}: no tasks folder (build it with scripts/peer_envs.sh, or pass --{name.split('-')[0]} DIR)",
                  file=sys.stderr)
            continue
        result = survey(name, folder, only)
        print_table(result, args.top)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0 if results else 2


if __name__ == "__main__":
    sys.exit(main())
