"""MMLongCite's pack command (registered in plugin.py): ``avhb
mmlongcite-build ITEMS --out DIR --target-tokens N ...`` builds long
MMLongCite contexts from short items (see build.py).

    avhb mmlongcite-build items.jsonl --out DIR --target-tokens 16384 --mode truncate
    avhb mmlongcite-build items.jsonl --out DIR --target-tokens 16384 --mode distract \\
        --pool pool.jsonl --judge distractor_check=openai:Qwen3.5-397B-A17B,base_url=...

ITEMS: MMLongCite rows (``id``, ``context``, ``question``, ``ground_truth``,
``task``) with ``evidence`` (gold unit indices, 1-based).  POOL: documents
``{"id", "context": [units]}``.  Image paths are kept as written and read
against ``--data-root`` (default: the folder of ITEMS) when a candidate's
images are shown to the judge.

Writes ``DIR/data/mmlongcite/<ITEMS stem>.jsonl`` (the built rows, upstream
schema plus ``evidence``), ``DIR/rejections.jsonl`` (one line per rejected
distractor, with the reason) and ``DIR/journal/`` (every judge call, through
the core's caller: running the command again makes no new calls).  An item
that cannot be built (its evidence alone is over the target) is reported and
skipped; the others are written.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from avhb import UserError, write_atomic

from . import build, data

ROLE = "distractor_check"


def _role(with_images: bool):
    from avhb import JudgeRole

    cfg = {"prompt_file": "prompts/distractor_check.txt", "parser": "yes_no", "retries": 2,
           "media": ["image"] if with_images else []}
    return JudgeRole.from_config(ROLE, cfg, Path(__file__).resolve().parent)


def _read(path: Path, what: str) -> list[dict]:
    if not path.is_file():
        raise UserError(f"{path}: {what} file not found")
    return data.read_rows(path)


def build_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="avhb mmlongcite-build", description="Build long MMLongCite contexts")
    ap.add_argument("items", help="rows with evidence (JSON or JSON lines)")
    ap.add_argument("--out", required=True, help="output folder (rows go to OUT/data/mmlongcite/)")
    ap.add_argument("--target-tokens", type=int, required=True, help="L_t, the context length to build")
    ap.add_argument("--mode", choices=["truncate", "distract"], default="truncate",
                    help="truncate: symmetric proportional truncation; distract: add screened pool documents")
    ap.add_argument("--pool", default=None, help="distractor documents (distract mode)")
    ap.add_argument("--judge", action="append", default=[], metavar="distractor_check=BACKEND:NAME[,k=v]")
    ap.add_argument("--tokens-per-image", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-root", default=None, help="where the rows' image paths resolve (default: ITEMS' folder)")
    args = ap.parse_args(argv)
    if args.target_tokens <= 0 or args.tokens_per_image < 0:
        raise UserError("--target-tokens must be positive and --tokens-per-image not negative")
    items_path = Path(args.items)
    items = _read(items_path, "items")
    out = Path(args.out)
    root = Path(args.data_root) if args.data_root else items_path.parent
    count = build.estimate_tokens(args.tokens_per_image)
    for i, item in enumerate(items):
        where = f"{items_path}: row id {item.get('id', i)}"
        data.check_row({**item, "text_length": 0, "mm_length": 0}, where)
        if args.mode == "truncate" and not item.get("evidence"):
            raise UserError(f"{where}: truncation needs 'evidence' (gold unit indices, 1-based)")
    rows, rejections, skipped = asyncio.run(_build(args, items, root, count, out))
    dest = out / data.DATA_DIR / f"{items_path.stem}.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    _write_lines(dest, rows)
    _write_lines(out / "rejections.jsonl", rejections)
    for line in skipped:
        print(f"avhb: mmlongcite-build: skipped {line}", file=sys.stderr)
    print(json.dumps({"rows": len(rows), "skipped": len(skipped), "rejected_distractors": len(rejections),
                      "written": str(dest)}))
    return 1 if skipped else 0


async def _build(args, items, root: Path, count, out: Path):
    rows: list[dict[str, Any]] = []
    rejections: list[dict[str, Any]] = []  # a distractor the judge turned down (build.Screened.rejected)
    skipped: list[str] = []  # an item that could not be built, and why
    if args.mode == "truncate":
        for item in items:
            try:
                t = build.truncate(item["context"], item["evidence"], args.target_tokens, count)
            except ValueError as exc:
                skipped.append(f"id {item.get('id')}: {exc}")
                continue
            rows.append(build.as_row(item, t.context, t.evidence, count))
        return rows, rejections, skipped
    if not args.pool:
        raise UserError("--mode distract needs --pool POOL (distractor documents)")
    pool = _read(Path(args.pool), "pool")
    from avhb import CallSession, parse_judge_bindings

    bindings = parse_judge_bindings(args.judge)
    unknown = sorted(set(bindings) - {ROLE, "*"})
    if unknown:
        raise UserError(f"--judge {unknown[0]}=...: this command has one judge role, {ROLE}")
    with_images = any(u.get("type") == "image" for d in pool for u in d.get("context") or [])
    role = _role(with_images)
    session = CallSession(out / "journal", bindings)
    judges = session.judges
    try:
        judges.prepare({ROLE: role})  # no key, unknown kind, or a judge that sees no images: stop now
        task_judges = judges.for_task("mmlongcite-build", {ROLE: role})

        def media_path(p: str) -> str:
            return p if os.path.isabs(p) else str(root / data.resolve_image(root, p))

        for item in items:
            try:
                res = await build.add_distractors(item, pool, args.target_tokens, count, task_judges,
                                                  seed=args.seed, media_path=media_path)
            except ValueError as exc:
                skipped.append(f"id {item.get('id')}: {exc}")
                continue
            rejections.extend(res.rejected)
            rows.append({**build.as_row(item, res.context, res.evidence, count), "distractors": res.distractors})
    finally:
        await session.aclose()
    return rows, rejections, skipped


def _write_lines(path: Path, rows: list[dict]) -> None:
    write_atomic(path, lambda fh: fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
