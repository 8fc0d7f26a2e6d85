"""MMLongCite context building: symmetric proportional truncation (hand
computed), distractor screening by the ``distractor_check`` judge through
the core's judges and caller (images attached, rejections logged), and the
``avhb mmlongcite-build`` command against a local OpenAI-compatible judge."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from avhb.errors import UserError
from avhb.model.backend import Backend, Capabilities
from avhb.model.messages import ImagePart, Response
from avhb.runfolder.journal import Journal
from avhb.score.judges import Judges, parse_judge_bindings
from avhb.tasks.mmlongcite import build, commands
from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer


def t(n: int, tag: str = "") -> dict:
    """A text unit of n tokens (3 characters each under the estimate)."""
    return {"type": "text", "text": (tag + "x" * (3 * n))[: 3 * n]}


COUNT = build.estimate_tokens(256)


def test_truncation_budget_hand_computed():
    # L_t 16, L_e 4, L_p 30, L_s 10: (16-4)*30/40 = 9, (16-4)*10/40 = 3
    assert build.truncation_budget(16, 4, 30, 10) == (9, 3)
    assert build.truncation_budget(100, 4, 30, 10) == (30, 10)  # everything fits: nothing cut
    assert build.truncation_budget(10, 3, 5, 0) == (5, 0)
    assert build.truncation_budget(7, 3, 7, 3) == (2, 1)  # 4*7/10 = 2.8, 4*3/10 = 1.2, floored
    with pytest.raises(ValueError, match="evidence alone"):
        build.truncation_budget(3, 4, 1, 1)


def test_truncate_cuts_at_unit_boundaries_keeping_the_evidence_whole():
    # prefix 10+10+5+5 = 30, evidence 4, suffix 2+2+6 = 10; budgets 9 and 3
    units = [t(10, "a"), t(10, "b"), t(5, "c"), t(5, "d"), t(4, "E"), t(2, "f"), t(2, "g"), t(6, "h")]
    res = build.truncate(units, [5], 16, COUNT)
    assert res.budgets == (9, 3)
    assert [u["text"][0] for u in res.context] == ["d", "E", "f"]  # 5 of 9 (next 5 would overflow), 2 of 3
    assert res.evidence == [2] and res.kept == (4, 6)
    # two evidence units: the span between them stays whole
    res = build.truncate(units, [3, 6], 20, COUNT)  # L_e = 5+5+4+2 = 16, room 4: prefix 20 -> 2, suffix 8 -> 1
    assert res.budgets == (2, 1) and [u["text"][0] for u in res.context] == ["c", "d", "E", "f"]
    assert res.evidence == [1, 4]
    with pytest.raises(ValueError, match="longer than the target"):
        build.truncate(units, [1, 8], 20, COUNT)


class Screener(Backend):
    """A judge backend: 'yes' when the candidate mentions Paris or its image
    is red; records the decoded images it was sent."""

    capabilities = Capabilities(images=4, max_context=100000)
    concurrency = 4

    def __init__(self, spec):
        super().__init__(spec)
        self.seen: list[tuple[str, list]] = []

    async def generate(self, request):
        images = [p.array for m in request.messages for p in m.parts if isinstance(p, ImagePart)]
        candidate = request.fields["candidate"]
        self.seen.append((candidate, images))
        red = any(a is not None and a[..., 0].mean() > 200 and a[..., 1].mean() < 60 for a in images)
        if "garbled" in candidate:
            return Response(text="perhaps")
        return Response(text="yes" if "Paris" in candidate or red else "no")


def pool(tmp_path: Path) -> list[dict]:
    Image.new("RGB", (40, 30), (230, 20, 20)).save(tmp_path / "red.png")
    Image.new("RGB", (40, 30), (20, 20, 230)).save(tmp_path / "blue.png")
    return [
        {"id": "d1", "context": [t(10, "Lyon is in France. ")]},
        {"id": "d2", "context": [t(10, "Paris is the capital. ")]},
        {"id": "d3", "context": [t(5, "A poster. "), {"type": "image", "image": "red.png"}]},
        {"id": "d4", "context": [t(5, "Another poster. "), {"type": "image", "image": "blue.png"}]},
        {"id": "d5", "context": [t(10, "garbled reply bait ")]},
        {"id": "d6", "context": [t(2000, "too long ")]},
    ]


ITEM = {"id": 7, "question": [{"type": "text", "text": "Where was the director born?"}], "ground_truth": "Paris",
        "task": ["MS_Multi_Hop"], "context": [t(8, "Film X was directed by J. "), t(8, "J was born in Paris. ")],
        "evidence": [1, 2]}


async def test_distractors_screened_through_the_core_judges(tmp_path):
    backends: list[Screener] = []

    def factory(spec):
        backends.append(Screener(spec))
        return backends[-1]

    journal = Journal(tmp_path / "journal")
    judges = Judges(parse_judge_bindings(["distractor_check=screener"]), journal, factory)
    role = commands._role(with_images=True)
    judges.prepare({"distractor_check": role})
    task_judges = judges.for_task("build", {"distractor_check": role})
    res = await build.add_distractors(ITEM, pool(tmp_path), 2 * 8 + 10 + 5 + 256 + 5 + 256, COUNT, task_judges,
                                      seed=3, media_path=lambda p: str(tmp_path / p))
    journal.close()
    assert sorted(res.distractors) == ["d1", "d4"]  # d2 mentions the answer, d3's image is red, d5 never parsed
    assert {(r["candidate"], r["reason"]) for r in res.rejected} == {
        ("d2", "supports or contradicts the answer"), ("d3", "supports or contradicts the answer"),
        ("d5", "judge reply never parsed")}
    seen = dict(backends[0].seen)
    assert "d6" not in json.dumps(res.rejected) and not any("too long" in c for c in seen)  # never asked: cannot fit
    poster = next(imgs for c, imgs in seen.items() if c.startswith("Another poster"))
    assert len(poster) == 1 and np.abs(poster[0].astype(int) - (20, 20, 230)).max() <= 1  # the image, as pixels
    # the item's block moved as one: evidence follows it
    texts = [u.get("text", "")[:10] for u in res.context]
    start = texts.index("Film X was")
    assert res.evidence == [start + 1, start + 2] and texts[start + 1].startswith("J was born")
    assert sum(COUNT(u) for u in res.context) <= 2 * 8 + 10 + 5 + 256 + 5 + 256
    # a judge that cannot see images is refused before any call
    text_only = Judges(parse_judge_bindings(["distractor_check=scripted,replies=x"]), Journal(tmp_path / "j2"),
                       lambda spec: type("T", (Screener,), {"capabilities": Capabilities(images=0)})(spec))
    with pytest.raises(UserError, match="sees no images"):
        text_only.prepare({"distractor_check": role})


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_build_command_against_a_local_judge(tmp_path):
    items = _write(tmp_path / "items.jsonl", [ITEM])
    pool_file = _write(tmp_path / "pool.jsonl", pool(tmp_path))

    def reply(body):
        # the question: the first user turn (the system line is the judges' fence note; a re-ask appends turns)
        content = next(m for m in body["messages"] if m["role"] == "user")["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        images = [p for p in parts if p["type"] == "image_url"]
        if "garbled" in text:
            return "hmm"
        return "yes" if "Paris is the capital" in text or ("A poster." in text and images) else "no"

    out = tmp_path / "out"
    with ScriptedServer(reply=reply) as srv:
        judge = f"distractor_check=openai:screen,base_url={srv.base_url}"
        args = ["mmlongcite-build", str(items), "--out", str(out), "--target-tokens", "560", "--mode", "distract",
                "--pool", str(pool_file), "--judge", judge, "--seed", "3"]
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        calls = srv.count
        assert calls >= 5
        again = run_cli(*args)
        assert again.returncode == 0 and srv.count == calls  # every judge call came from the journal
        missing = run_cli(*args[:-4])
        assert missing.returncode == 2 and "bind one with --judge distractor_check=" in missing.stderr
    rows = [json.loads(x) for x in (out / "data" / "mmlongcite" / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and sorted(rows[0]["distractors"]) == ["d1", "d4"]
    assert rows[0]["mm_length"] == sum(COUNT(u) for u in rows[0]["context"]) <= 560
    assert set(rows[0]) >= {"id", "context", "question", "ground_truth", "task", "text_length", "mm_length", "evidence"}
    rejected = [json.loads(x) for x in (out / "rejections.jsonl").read_text().splitlines()]
    assert sorted(r["candidate"] for r in rejected) == ["d2", "d3", "d5"]
    assert (out / "journal" / "judges.jsonl").is_file()


def test_build_command_truncates(tmp_path):
    units = [t(10, "a"), t(10, "b"), t(5, "c"), t(5, "d"), t(4, "E"), t(2, "f"), t(2, "g"), t(6, "h")]
    items = _write(tmp_path / "long.jsonl", [{**ITEM, "context": units, "evidence": [5]},
                                            {**ITEM, "id": 8, "context": units, "evidence": [1, 8]}])
    proc = run_cli("mmlongcite-build", str(items), "--out", str(tmp_path / "o"), "--target-tokens", "16")
    assert proc.returncode == 1 and "skipped id 8" in proc.stderr  # its evidence alone is over the target
    rows = [json.loads(x) for x in (tmp_path / "o" / "data" / "mmlongcite" / "long.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [7] and rows[0]["evidence"] == [2]
    assert [u["text"][0] for u in rows[0]["context"]] == ["d", "E", "f"] and rows[0]["mm_length"] == 11
    bad = _write(tmp_path / "bad.jsonl", [{k: v for k, v in ITEM.items() if k != "evidence"}])
    proc = run_cli("mmlongcite-build", str(bad), "--out", str(tmp_path / "o2"), "--target-tokens", "16")
    assert proc.returncode == 2 and "truncation needs 'evidence'" in proc.stderr
