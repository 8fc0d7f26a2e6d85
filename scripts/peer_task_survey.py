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

``--peer-check`` also asks each peer whether it can load the file itself: its own
loader with hooks resolved (lm-eval's ``load_yaml(path, resolve_func=True)``,
lmms-eval's ``load_yaml_config(path, mode="full")``), run by the peer's
interpreter (the venv the tasks folder lies in, or ``--lm-eval-python`` /
``--lmms-python``).  That runs the peers' task modules, in their own venvs.
The table then splits avhb's refusals into files the peer loads and files the
peer cannot load either.
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
    match = re.match(r"^(?:avhb: error: )?(?:[^:]*/[^:]*|[^:\s]+):\d+: (.*)$", text)  # FILE:LINE: (spaces allowed)
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


_PEER_LOADERS = {
    "lm-eval": "from lm_eval.tasks._yaml_loader import load_yaml\nload = lambda p: load_yaml(p, resolve_func=True)\n",
    "lmms-eval": "from lmms_eval.utils import load_yaml_config\nload = lambda p: load_yaml_config(yaml_path=p, mode='full')\n",
}
_PEER_SCRIPT = """
import json, logging, os, sys, warnings
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")
{loader}
for line in sys.stdin:
    path = line.rstrip("\\n")
    try:
        load(path)
        out = {{"path": path, "ok": True}}
    except BaseException as exc:
        out = {{"path": path, "ok": False, "error": f"{{type(exc).__name__}}: {{str(exc)[:160]}}"}}
    sys.__stdout__.write(json.dumps(out) + "\\n")
    sys.__stdout__.flush()
"""


def peer_verdicts(name: str, python: Path, files: list[Path]) -> dict[str, dict]:
    """The peer's own loader over ``files``, in the peer's interpreter: path -> {ok, error}."""
    import subprocess

    script = _PEER_SCRIPT.format(loader=_PEER_LOADERS[name])
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(python), "-c", script], input="".join(f"{f}\n" for f in files), text=True,
                          capture_output=True, env=env, cwd="/tmp")
    out = {}
    for line in proc.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        out[row["path"]] = row
    for f in files:
        out.setdefault(str(f), {"path": str(f), "ok": False, "error": f"the peer's loader died ({proc.returncode})"})
    return out


def _venv_python(tasks_dir: Path) -> Path | None:
    for parent in tasks_dir.resolve().parents:
        if (parent / "bin" / "python").exists() and (parent / "pyvenv.cfg").exists():
            return parent / "bin" / "python"
    return None


def survey(name: str, tasks_dir: Path, only: set[str] | None, peer_python: Path | None = None) -> dict:
    from avhb.cli import main

    tasks_dir = tasks_dir.resolve()  # the peer's loader runs in another working folder
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
    peer: dict[str, dict] = {}
    if peer_python is not None:
        peer = peer_verdicts(name, peer_python, [p for folder in folders for p in task_files(folder)])
    split: collections.Counter = collections.Counter()
    peer_reasons: collections.Counter = collections.Counter()
    refused_files: list[dict] = []  # each refused file: its path, every reason, the peer's verdict
    start = time.perf_counter()
    for folder in folders:
        counts: collections.Counter = collections.Counter()
        for path in task_files(folder):
            kind, lines = validate_one(main, path)
            if peer:
                theirs = peer[str(path)]
                split[(kind, "peer loads" if theirs["ok"] else "peer refuses")] += 1
                if not theirs["ok"]:
                    peer_reasons[reason_of(theirs["error"])] += 1
                    examples.setdefault("peer: " + reason_of(theirs["error"]), str(path.relative_to(tasks_dir)))
            counts[kind] += 1
            outcome[kind] += 1
            if kind == "refused":
                reasons = [reason_of(line) for line in lines] or ["(no message)"]
                first_reason[reasons[0]] += 1
                for reason in set(reasons):
                    any_reason[reason] += 1
                    examples.setdefault(reason, f"{path.relative_to(tasks_dir)}: {lines[0][:200]}" if lines else "")
                refused_files.append({"path": str(path.relative_to(tasks_dir)), "reasons": reasons,
                                      **({"peer": peer[str(path)]} if peer else {})})
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
            "traceback_kinds": tracebacks.most_common(), "examples": examples, "per_folder": per_folder,
            "against_peer": {f"{a} / {b}": n for (a, b), n in sorted(split.items())},
            "peer_refusals": peer_reasons.most_common(), "refused_files": refused_files}


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
    if result.get("against_peer"):
        print("\n| avhb / the peer's own loader | files |")
        print("|---|---|")
        for key, count in result["against_peer"].items():
            print(f"| {key} | {count} |")
        peer_ok = sum(n for k, n in result["against_peer"].items() if k.endswith("/ peer loads"))
        both = result["against_peer"].get("loaded / peer loads", 0)
        if peer_ok:
            print(f"\navhb loads {both} of the {peer_ok} files the peer loads itself ({100 * both / peer_ok:.2f} %)")
        print("\n| files the peer itself cannot load | its error (values elided) | example |")
        print("|---|---|---|")
        for reason, count in result["peer_refusals"][:top]:
            print(f"| {count} | {reason.replace('|', chr(92) + '|')[:150]} | {result['examples'].get('peer: ' + reason, '')} |")
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
    parser.add_argument("--peer-check", action="store_true",
                        help="also run each peer's own loader over its files (in the peer's venv)")
    parser.add_argument("--lm-eval-python", type=Path, help="lm-eval's interpreter (default: the tasks folder's venv)")
    parser.add_argument("--lmms-python", type=Path, help="lmms-eval's interpreter (default: the tasks folder's venv)")
    args = parser.parse_args(argv)
    os.environ.setdefault("AVHB_NO_PROGRESS", "1")
    only = {f.strip() for f in args.folders.split(",") if f.strip()} or None
    results = []
    for name, folder in (("lm-eval", args.lm_eval), ("lmms-eval", args.lmms)):
        if folder is None or not folder.is_dir():
            print(f"{name}: no tasks folder (build it with scripts/peer_envs.sh, or pass --{name.split('-')[0]} DIR)",
                  file=sys.stderr)
            continue
        python = None
        if args.peer_check:
            python = (args.lm_eval_python if name == "lm-eval" else args.lmms_python) or _venv_python(folder)
            if python is None:
                print(f"{name}: --peer-check needs the peer's interpreter (--{name.split('-')[0]}-python)",
                      file=sys.stderr)
                return 2
        result = survey(name, folder, only, python)
        print_table(result, args.top)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0 if results else 2


if __name__ == "__main__":
    sys.exit(main())
