"""docs/plugins.md's worked example, built from the doc's own code blocks:
every fenced block with a ``title="PATH"`` is written out, the two packages
(the ``mypack`` task pack and the ``kw`` judge extension) are installed with
pip into a folder of their own, and the doc's ``try it`` command runs as
written (``AVHB_PLUGINS=mypack,kw``: the built-in ``scripted`` backend and
``judge_012`` metric load too), giving the numbers the doc states.  So the
doc cannot rot: a block that stops building or running fails here."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tests.servers.openai_server import ScriptedServer

DOC = ROOT / "docs" / "plugins.md"
COMMANDS = ("try it", "with a model")  # the titled blocks that are shell commands, not files
BLOCK = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```$', re.M | re.S)


def doc_blocks() -> dict[str, str]:
    """Each titled block of the doc: title -> its text."""
    blocks = {title: text for _, title, text in BLOCK.findall(DOC.read_text(encoding="utf-8"))}
    assert len(blocks) == len(BLOCK.findall(DOC.read_text(encoding="utf-8"))), "two blocks share a title"
    return blocks


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The doc's files written under a fresh folder, both packages pip
    installed (no dependencies: avhb is this checkout) into ``site``."""
    blocks = doc_blocks()
    work = tmp_path_factory.mktemp("plugins_doc")
    for title, text in blocks.items():
        if title not in COMMANDS:
            path = work / title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    install = [line for line in blocks["try it"].splitlines() if line.startswith("pip install ")]
    assert install == ["pip install ./mypack ./kw"], install
    site = work / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(site), *install[0].split()[2:]], cwd=work, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return work, site, blocks


def _command(blocks: dict[str, str], title: str = "try it") -> tuple[dict[str, str], list[str]]:
    """The ``avhb`` line of the doc's block ``title``: its leading VAR=value
    assignments and its arguments."""
    (line,) = [line for line in blocks[title].splitlines() if " avhb " in f" {line} "]
    words = shlex.split(line)
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words.pop(0) == "avhb", line
    return env, words


def _run(built, *args: str, env: dict[str, str]):
    work, site, _ = built
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return run_cli(*args, env={**env, "PYTHONPATH": path}, cwd=work)


def _samples(run: Path) -> dict[str, dict]:
    lines = (run / "samples" / "mypack__capitals.jsonl").read_text().splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def test_the_doc_command_runs_the_pack_and_its_judge_as_the_doc_says(built):
    work, _, blocks = built
    env, args = _command(blocks)
    assert env == {"AVHB_PLUGINS": "mypack,kw"}
    proc = _run(built, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    run = work / args[args.index("--output-dir") + 1]
    res = json.loads((run / "results.json").read_text())["results"]["mypack/capitals"]
    assert Fraction(res["exact_match"]).limit_denominator(10) == Fraction(1, 3)
    assert Fraction(res["judge_012"]).limit_denominator(10) == Fraction(2, 3)
    samples = _samples(run)
    assert {i: s["judgements"]["judge_012"]["value"] for i, s in samples.items()} == {"c0": 2, "c1": 0, "c2": 2}
    assert samples["c0"]["doc"]["country"] == "France"  # process_docs trimmed " France"
    # prices = FREE: the estimate counts the judge's calls at 0 USD, not "cost unknown"
    assert "cost <= 0.000000 USD" in proc.stderr and "cost unknown" not in proc.stderr, proc.stderr


def test_a_judge_that_builds_a_backend_asks_it_and_costs_what_it_costs(built):
    """The doc's ``ask=openai:gpt-4.1-mini``, against a server of this test's
    (``$OPENAI_BASE_URL``): only the answer with none of the words reaches
    it, its reply is the verdict, and the judge's cost is the server's:
    unknown."""
    work, _, blocks = built
    env, args = _command(blocks, "with a model")
    assert env == {"AVHB_PLUGINS": "mypack,kw"} and "scorer=kw/keyword,ask=openai:gpt-4.1-mini" in args
    with ScriptedServer(reply=lambda body: "1") as srv:
        proc = _run(built, *args, env={**env, "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": ""})
        assert proc.returncode == 0, proc.stderr
        assert srv.count == 1 and "Kyoto" in json.dumps(srv.requests[0].body)
    samples = _samples(work / args[args.index("--output-dir") + 1])
    assert {i: s["judgements"]["judge_012"]["value"] for i, s in samples.items()} == {"c0": 2, "c1": 1, "c2": 2}
    assert "cost unknown (kw/keyword: no prices known)" in proc.stderr, proc.stderr


def test_process_docs_takes_a_list_or_a_dataset_and_gives_back_the_same(built):
    datasets = pytest.importorskip("datasets")
    _, site, _ = built
    code = ("import sys, json, datasets; sys.path.insert(0, sys.argv[1]); "
            "from mypack.tasks.capitals.hooks import clean; "
            "rows = [{'id': 'a', 'country': ' France '}]; "
            "listed = clean(rows); ds = clean(datasets.Dataset.from_list(rows)); "
            "print(json.dumps([type(listed).__name__, listed, type(ds).__name__, ds[0]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["list", [{"id": "a", "country": "France"}], "Dataset",
                                       {"id": "a", "country": "France"}]
    assert datasets  # the import above is the same package


def test_a_pack_without_its_judges_plugin_says_which_plugin_is_missing(built):
    """The doc's AVHB_PLUGINS paragraph: naming the pack alone leaves the
    judge's plugin out, and the run says so before any sample."""
    _, _, blocks = built
    env, args = _command(blocks)
    proc = _run(built, *args, env={"AVHB_PLUGINS": "mypack"})
    assert proc.returncode == 2, proc.stderr
    assert ("task mypack/capitals: judge role 'scorer' (kw/keyword): unknown backend 'kw/keyword': plugin 'kw' "
            "not installed?") in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_the_documented_answer_spaces_are_the_parsers_own():
    """docs/plugins.md's ``Request.choices`` table, for the parsers whose
    whole list it spells out, is what avhb sends."""
    import ast

    from avhb.score.judge_replies import answer_space

    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (score_0_2|yes_no|pairwise) \| `(\[.*?\])` \|$", text, re.M))
    assert set(rows) == {"score_0_2", "yes_no", "pairwise"}, rows
    for parser, shown in rows.items():
        assert ast.literal_eval(shown) == answer_space(parser, {}), parser
    assert answer_space("rating_json", {})[0] == '{"rating": 1}' and len(answer_space("rating_json", {})) == 5
