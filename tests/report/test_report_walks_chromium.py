"""Multi-step samples and the model's usage in the report, opened in
headless Chromium: real run folders made by the CLI against the scripted
OpenAI-compatible server (HAVE's interaction tasks on their sample pack,
ANCHOR's Socratic mode on its sample pack, the same scripts as
tests/tasks/test_have_e2e.py and test_anchor_e2e.py).  Screenshots are kept
in tests/artifacts/ (have_walk_report.png, anchor_socratic_report.png)."""
from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from avhb.run.usage import fmt_seconds
from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer
from tests.tasks import test_anchor_e2e as anchor_e2e
from tests.tasks import test_have_e2e as have_e2e
from avhb.report.html import write_report
from report_fixtures import write_long_walk
from test_report_chromium import ARTIFACTS, _render, _sample

pytestmark = pytest.mark.slow


def _usage_cells(dom: str, task: str) -> list[str]:
    row = re.search(rf'<tr [^>]*data-usage="model" data-task="{task}">(.*?)</tr>', dom, re.S)
    assert row, f"no usage row for the model on {task}"
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


class _TableRows(HTMLParser):
    """The rows of the first ``<table class="trajectory">``: each row's
    ``class`` and its cells' text (a nested table's text joined by spaces)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self.depth = 0  # tables open inside (and including) the trajectory table
        self.done = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if self.done:
            return
        if tag == "table" and (self.depth or dict(attrs).get("class") == "trajectory"):
            self.depth += 1
        elif self.depth == 1 and tag == "tr":
            self.rows.append((dict(attrs).get("class") or "", []))
        elif self.depth == 1 and tag == "td":
            self.cell = []

    def handle_endtag(self, tag):
        if self.done or not self.depth:
            return
        if tag == "table":
            self.depth -= 1
            self.done = self.depth == 0
        elif self.depth == 1 and tag == "td" and self.cell is not None:
            self.rows[-1][1].append(re.sub(r"\s+", " ", " ".join(self.cell)).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None and data.strip():
            self.cell.append(data.strip())


def _trajectory(card: str) -> list[tuple[str, list[str]]]:
    """(row class, [step, kind, role, prompt / answer, verdict, details]) per step of the card's trajectory."""
    parser = _TableRows()
    parser.feed(card)
    assert parser.done, "no trajectory table in the card"
    return [(cls, cells) for cls, cells in parser.rows if cells]


def _shot(shot: Path, name: str) -> None:
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / name)


def test_have_walk_card_and_model_usage_in_chromium(tmp_path):
    out = tmp_path / "have"
    with ScriptedServer(reply=have_e2e.scenario_reply) as srv:
        model = f"openai:m,base_url={srv.base_url},audio=true"
        judge = f"openai:judge,base_url={srv.base_url},audio=true"
        proc = run_cli("--tasks", "have_navigation,have_music_reproduction", "--sample-data", "--model", model,
                       "--judge", f"*={judge}", "--output-dir", str(out), env=have_e2e.KEY, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    usage = json.loads((out / "results.json").read_text())["usage"]["model"]

    # the music walk of repeat 2, alone (the search reaches the repeat as shown: "#2"), so opened
    shot = tmp_path / "walk.png"
    dom = _render(out / "report.html", tmp_path, shot, query="?q=mus_0001%20%232", height=5200)
    assert '<span id="s-count" class="muted">1 of 6 samples match</span>' in dom

    # usage: the model's calls per task (2 turns x 3 repeats; 4 turns x 3 repeats) and in total, p50 / p95
    # as results.json has them, beside the judges' row
    for task, calls in (("have_navigation", 6), ("have_music_reproduction", 12), ("total", 18)):
        cells = _usage_cells(dom, task)
        cell = usage["total"] if task == "total" else usage["tasks"][task]
        latency = cell["latency_s"]
        assert cells[:4] == ["model", task, str(calls), "0"], cells
        assert cells[8:] == [fmt_seconds(latency["p50"]), fmt_seconds(latency["p95"]), str(calls)], cells
    judges = re.search(r'<tr [^>]*data-usage="judges">(.*?)</tr>', dom, re.S).group(1)
    assert "<td>judges (every role)</td>" in judges and '<td class="num">' in judges
    # the count columns explained under the results: 1 document x 3 repeats, ambiguous_steps by its description
    note = re.search(r'<dl class="kv" id="count-columns">.*?</dl>', dom, re.S).group(0)
    assert "have_music_reproduction 3 = 1 document × 3 repeats" in note
    assert "<code>ambiguous_steps</code>: turns where more than one edge fired" in note

    card = _sample(dom, "mus_0001")
    assert re.match(r'<details class="sample" data-task="have_music_reproduction" data-id="mus_0001" '
                    r'data-error="0" data-judgefail="0" open="">', card)
    assert '<span class="badge">4 model steps, 8 verdicts</span>' in card
    steps = _trajectory(card)
    rows = [cells for _, cells in steps]
    # the turns: what the model answered at each step
    turns = [(r[0], r[3]) for r in rows if r[1] == "model"]
    assert turns == [(f"turn{k}", reply) for k, reply in enumerate(have_e2e.TURNS["music"], 1)]
    assert all(r[2] == "model" for r in rows if r[1] == "model")
    # every edge judged, by its role, with its verdict, in order
    verdicts = [(r[0], r[2], r[4]) for r in rows if r[1] == "judge"]
    assert verdicts == [("turn1.edge0", "edge_criterion", "yes ok"), ("turn1.edge1", "edge_criterion", "no ok"),
                        ("turn2.edge4", "edge_criterion", "yes ok"), ("turn2.edge5", "edge_criterion", "yes ok"),
                        ("turn3.edge0", "edge_criterion", "no ok"), ("turn3.edge1", "edge_criterion", "yes ok"),
                        ("turn4.edge2", "edge_criterion", "yes ok"), ("turn4.edge3", "edge_criterion", "no ok")]
    # each turn's move as the driver logged it: the node, the edges judged with their verdicts, where it went
    moves = [r for r in rows if r[1] == "transition"]
    assert [m[0] for m in moves] == ["turn1", "turn2", "turn3", "turn4"]
    assert moves[1][5] == ("node fast_soft edges edge to verdict 4 slow_soft yes 5 fast_loud yes "
                           "fired 4, 5 to slow_soft ambiguous true")
    # a new turn starts a new group of rows
    assert [r[0] for cls, r in steps if cls == "turn"] == ["turn1", "turn2", "turn3", "turn4"]
    assert "slow_soft, fast_soft, slow_soft, slow_loud, fast_loud" in card  # the walk's path (outputs)
    _shot(shot, "have_walk_report.png")


def test_anchor_socratic_steps_in_chromium(tmp_path):
    out = tmp_path / "anchor"
    with ScriptedServer(reply=anchor_e2e.reply) as srv:
        proc = run_cli("--tasks", "anchor", "--sample-data", "--model",
                       f"openai:alpha,base_url={srv.base_url},audio=true", *anchor_e2e._judges(srv.base_url),
                       "--media", "chunks={seconds: 4},max_side=80", "--output-dir", str(out), env=anchor_e2e.KEY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shot = tmp_path / "socratic.png"
    dom = _render(out / "report.html", tmp_path, shot, query="?q=long_0004", height=8600)
    card = _sample(dom, "long_0004:0")
    rows = [cells for _, cells in _trajectory(card)]
    # the driver's log of the chunks, then one model step per chunk and the synthesis
    assert [(r[0], r[1], r[2]) for r in rows] == [("socratic", "log", ""), ("chunk1", "model", "model"),
                                                   ("chunk2", "model", "model"), ("chunk3", "model", "model"),
                                                   ("synthesis", "model", "model")]
    assert rows[0][5] == "chunks [[0,4],[4,8],[8,10]] clip 0, 10"
    assert [r[3] for r in rows[1:4]] == [f"NOTE{k}: the picture and the sound in part {k}" for k in (1, 2, 3)]
    assert rows[4][3].endswith("Final Answer: [alpha:s6] RIGHT")
    # the judgements table names the metric and the role that judged it
    assert re.search(r'<td>divergence</td><td class="role">divergence</td><td class="verdict">null</td>'
                     r'<td><span class="bad">unparsable</span></td>', card)
    # a one-call sample of the same multi-step task shows no trajectory (its response says it all)
    one = _render(out / "report.html", tmp_path, query="?q=bell_0001")
    assert 'class="trajectory"' not in _sample(one, "bell_0001:0")
    # the model's usage: 5 plain samples + 4 Socratic steps
    assert _usage_cells(dom, "anchor")[:4] == ["model", "anchor", "9", "0"]
    _shot(shot, "anchor_socratic_report.png")


def test_a_long_trajectory_says_in_the_card_what_it_left_out(tmp_path):
    """The page embeds the first and last steps of a 400-step trajectory;
    the card says how many steps stand between and where they all are."""
    dom = _render(write_report(write_long_walk(tmp_path / "walk")), tmp_path, query="?q=w0")
    steps = _trajectory(_sample(dom, "w0"))
    [gap] = [cells for _, cells in steps if len(cells) == 1]
    shown = len(steps) - 1
    assert gap == [f"{400 - shown} steps left out here (the report keeps the first and last steps of a long "
                   "trajectory); every step is in samples/walk.jsonl"]
    assert steps[0][1][:2] == ["turn0", "model"] and steps[-1][1][:2] == ["turn199", "transition"]
    assert steps[0][1][3].endswith("… [3008 more characters]")
    assert steps[-1][1][5].endswith("… [30 more items]")
