"""``avhb anchor-difficulty RUN...``: ANCHOR's difficulty grade per question
from the rollouts of several runs (the paper: 4 models x 4 samples = 16).

Definitions (the paper's; where it is silent, marked ours)
-----------------------------------------------------------
* rollouts of a question: its samples (every repeat) in every given run,
  matched by task and sample id; a sample that failed (``error``) is not a
  rollout and is counted in ``failed``;
* ``n_mismatch`` = rollouts whose ``answer_acc`` is 0 (the judge said the
  final answer does not match the reference); a rollout whose ``answer_acc``
  judge never answered is not counted either way (``unjudged``);
* ``s_sim`` = the ``dispersion`` judge's 1-5 rating of how scattered the
  rollouts' final answers are (5 = scattered), asked once per question with
  every rollout's final answer (in run, then repeat order);
* ``d_disagree`` = Difficult if n_mismatch >= 10, Medium if 5-9, else Easy;
* ``d_score`` = Difficult if s_sim = 5, Medium if 3-4, else Easy (a panel's
  mean rating: Difficult at 5, Medium on [3, 5), Easy below 3 — ours);
* ``difficulty`` = the harder of the two.  When the dispersion judge never
  answered, the grade is Difficult if d_disagree is (the max is known), else
  None (``ungraded``): never guessed.

The thresholds are the paper's absolute counts for 16 rollouts; the command
warns when a question has another number of rollouts.

The dispersion judge is asked through the first run's judges (its
``--judge`` flags, so ``*=SPEC`` carries over; ``--judge dispersion=SPEC``
rebinds it) and journaled in that run's journal: running the command again
makes no new calls.  Outputs: ``RUN/difficulty/<task>.jsonl`` (one line per
question) and ``RUN/difficulty/summary.json``, in the first run's folder.
"""
from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from avhb import Backend, BackendSpec, JudgeError, JudgeRole, UserError, create_backend, write_atomic

from .hooks import prompt

LEVELS = ("Easy", "Medium", "Difficult")
ROLE = "dispersion"
DEFAULT_JUDGE = "openai:gpt-5-nano"
PAPER_ROLLOUTS = 16


def d_disagree(n_mismatch: int) -> str:
    return "Difficult" if n_mismatch >= 10 else "Medium" if n_mismatch >= 5 else "Easy"


def d_score(s_sim: float | None) -> str | None:
    if s_sim is None:
        return None
    return "Difficult" if s_sim >= 5 else "Medium" if s_sim >= 3 else "Easy"


def grade(n_mismatch: int, s_sim: float | None) -> str | None:
    """max(d_disagree, d_score) (module docstring)."""
    a, b = d_disagree(n_mismatch), d_score(s_sim)
    if b is None:
        return a if a == "Difficult" else None
    return max(a, b, key=LEVELS.index)


def dispersion_role(default_judge: str = DEFAULT_JUDGE) -> JudgeRole:
    return JudgeRole(ROLE, prompt("dispersion"), "rating_json", defaults=[default_judge],
                     generation={"temperature": 0.0, "max_tokens": 4096})


@dataclass
class Rollout:
    run: int
    repeat: int
    answer: str
    answer_acc: float | None


@dataclass
class Question:
    task: str
    id: str
    question: str
    rollouts: list[Rollout] = field(default_factory=list)
    failed: int = 0
    s_sim: float | None = None
    judge_raw: str | None = None

    @property
    def n_mismatch(self) -> int:
        return sum(r.answer_acc == 0 for r in self.rollouts)

    @property
    def unjudged(self) -> int:
        return sum(r.answer_acc is None for r in self.rollouts)

    def to_json(self) -> dict[str, Any]:
        d_s = d_score(self.s_sim)
        return {"task": self.task, "id": self.id, "question": self.question, "rollouts": len(self.rollouts),
                "failed": self.failed, "unjudged": self.unjudged, "n_mismatch": self.n_mismatch,
                "s_sim": self.s_sim, "d_disagree": d_disagree(self.n_mismatch), "d_score": d_s,
                "difficulty": grade(self.n_mismatch, self.s_sim), "judge_raw": self.judge_raw,
                "answers": [asdict(r) for r in self.rollouts]}


def _answer(line: dict[str, Any]) -> str:
    value = line.get("extracted")
    return str(value if isinstance(value, str) else line.get("response") or "").strip()


def collect(samples_per_run: list[list[dict[str, Any]]], task: str) -> list[Question]:
    """The questions of one task with their rollouts over the runs."""
    questions: dict[str, Question] = {}
    for run_index, lines in enumerate(samples_per_run):
        for line in sorted(lines, key=lambda d: int(d.get("repeat", 0))):
            q = questions.setdefault(line["id"], Question(task, line["id"], str((line.get("doc") or {}).get("question", ""))))
            if line.get("error") is not None:
                q.failed += 1
                continue
            acc = (line.get("scores") or {}).get("answer_acc")
            q.rollouts.append(Rollout(run_index, int(line.get("repeat", 0)), _answer(line),
                                      None if acc is None else float(acc)))
    return list(questions.values())


def summarize(questions: list[Question]) -> dict[str, Any]:
    grades = Counter(grade(q.n_mismatch, q.s_sim) for q in questions)
    graded = sum(grades[level] for level in LEVELS)
    return {"questions": len(questions), **{level: grades[level] for level in LEVELS},
            "ungraded": grades[None], "share_difficult": grades["Difficult"] / graded if graded else None,
            "rollouts": dict(sorted(Counter(len(q.rollouts) for q in questions).items())),
            "failed_rollouts": sum(q.failed for q in questions),
            "unjudged_rollouts": sum(q.unjudged for q in questions),
            "judge_failures": sum(q.s_sim is None and bool(q.rollouts) for q in questions)}


def _anchor_tasks(manifests: list[dict[str, Any]]) -> list[str]:
    """The answer tasks of this pack that every run ran."""
    pack = Path(__file__).resolve().parent
    common = None
    for run in manifests:
        names = set()
        for name, info in (run.get("tasks") or {}).items():
            try:
                inside = Path(info.get("file", "")).resolve().parent == pack
            except OSError:
                inside = False
            if inside and name != "anchor_grounding":
                names.add(name)
        common = names if common is None else common & names
    return sorted(common or ())


async def grade_runs_async(run_dirs: list[Path], *, judges: dict[str, list[BackendSpec]] | None = None,
                           tasks: list[str] | None = None, default_judge: str = DEFAULT_JUDGE,
                           backend_factory: Callable[[BackendSpec], Backend] = create_backend,
                           concurrency: int = 16) -> dict[str, Any]:
    """See the module docstring; returns the summary."""
    from avhb import ReopenedRun, write_json_atomic

    if not run_dirs:
        raise UserError("anchor-difficulty: give at least one run folder")
    runs = [ReopenedRun(Path(d), judges=judges if i == 0 else {}, backend_factory=backend_factory)
            for i, d in enumerate(run_dirs)]
    first = runs[0]
    names = tasks or _anchor_tasks([r.manifest for r in runs])
    if not names:
        raise UserError("anchor-difficulty: the runs share no ANCHOR answer task (anchor, anchor_refined)")
    for r in runs:
        missing = [t for t in names if t not in (r.manifest.get("tasks") or {})]
        if missing:
            raise UserError(f"{r.root}: task(s) {', '.join(missing)} not in this run")
    role = dispersion_role(default_judge)
    limit = asyncio.Semaphore(max(1, concurrency))
    out_dir = first.root / "difficulty"
    summary: dict[str, Any] = {"runs": [str(r.root) for r in runs], "tasks": {}}
    try:
        first.judges.prepare({ROLE: role})
        for name in names:
            questions = collect([r.samples(name) for r in runs], name)
            task_judges = first.task_run(name, {ROLE: role}).judges

            async def rate(q: Question) -> None:
                if not q.rollouts:
                    return
                answers = "\n".join(f"{i}. {r.answer}" for i, r in enumerate(q.rollouts, 1))
                async with limit:
                    try:
                        verdict = await task_judges.ask(ROLE, {"question": q.question, "count": str(len(q.rollouts)),
                                                               "answers": answers})
                    except JudgeError as exc:  # no answer: no s_sim, the error kept as the raw reply
                        q.s_sim, q.judge_raw = None, str(exc)
                        return
                q.s_sim = float(verdict.value) if verdict.ok else None
                q.judge_raw = verdict.raw

            await asyncio.gather(*(rate(q) for q in questions))
            odd = Counter(len(q.rollouts) for q in questions if len(q.rollouts) != PAPER_ROLLOUTS)
            if odd:
                shown = ", ".join(f"{n} rollouts: {c} questions" for n, c in sorted(odd.items()))
                print(f"avhb: warning: anchor-difficulty: {name}: {shown}; the paper grades {PAPER_ROLLOUTS} "
                      "(4 models x 4 samples) and the n_mismatch thresholds (10, 5) assume them", file=sys.stderr)
            out_dir.mkdir(parents=True, exist_ok=True)
            path = out_dir / f"{name.replace('/', '__')}.jsonl"
            text = "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in questions)
            write_atomic(path, lambda fh: fh.write(text))
            summary["tasks"][name] = summarize(questions)
        summary["judges"] = {ROLE: [s.label for s in first.judges.panel(role)]}
        summary["judge_usage"] = first.judges.usage.as_dict()
    finally:
        for r in runs:
            await r.aclose()
    write_json_atomic(out_dir / "summary.json", summary)
    return summary


def grade_runs(run_dirs: list[Path], **options: Any) -> dict[str, Any]:
    return asyncio.run(grade_runs_async(run_dirs, **options))
