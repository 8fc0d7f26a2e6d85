"""lm-eval's scoring keys in a real run against a local OpenAI-compatible
server (issue 24, item 3): filter pipelines over repeats with metrics
reported as ``metric,filter``, ``process_results`` with ``aggregation``
(named and ``!function``) and ``higher_is_better``, ``should_decontaminate``
accepted with a note.  Every expected number is worked out by hand below."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer, echo_last_user

ANSWERS = ["1", "2", "3", "4"]
# doc -> the reply to repeats 0, 1, 2 (avhb sends seed = 1234 + repeat)
REPLIES = {
    "Q0": ["#### 1", "#### 1", "it is 7"],
    "Q1": ["answer 5 or 2", "#### 2", "#### 2"],
    "Q2": ["#### 3", "9", "8"],
    "Q3": ["#### 40", "4", "4"],
}


def _reply(body: dict) -> str:
    question = re.search(r"Q\d", echo_last_user(body)).group(0)
    return REPLIES[question][int(body.get("seed", 1234)) - 1234]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "lmsc"
    folder.mkdir()
    (folder / "test.jsonl").write_text("".join(json.dumps({"q": f"Q{i}", "a": a}) + "\n"
                                               for i, a in enumerate(ANSWERS)))
    base = f"""\
        dataset_path: json
        dataset_kwargs: {{data_files: {folder / 'test.jsonl'}}}
        test_split: train
        doc_to_text: "{{{{q}}}}"
        doc_to_target: a
        generation_kwargs: {{until: ["\\n"], max_gen_toks: 16}}
        """
    (folder / "pipes.yaml").write_text(textwrap.dedent(base) + textwrap.dedent("""\
        task: pipes
        repeats: 3
        should_decontaminate: true
        doc_to_decontamination_query: q
        filter_list:
          - name: strict-match
            filter:
              - function: regex
                regex_pattern: "#### (\\\\-?[0-9]+)"
              - function: take_first
          - name: flexible-extract
            filter:
              - function: regex
                regex_pattern: "(\\\\-?[0-9]+)"
                group_select: -1
              - function: take_first
          - name: maj@3
            filter:
              - function: regex
                regex_pattern: "(\\\\-?[0-9]+)"
                group_select: -1
              - function: majority_vote
              - function: take_first
        metric_list:
          - metric: exact_match
            aggregation: mean
            higher_is_better: true
        """))
    (folder / "utils.py").write_text(textwrap.dedent("""\
        def process_results(doc, results):
            answer = results[0]
            return {"hit": float(answer.endswith(doc["a"])), "chars": len(answer), "total": float(answer.endswith(doc["a"])),
                    "unreported": 1}

        def total(values):
            return sum(values)
        """))
    (folder / "scored.yaml").write_text(textwrap.dedent(base) + textwrap.dedent("""\
        task: scored
        process_results: !function utils.process_results
        metric_list:
          - {metric: hit, aggregation: mean, higher_is_better: true}
          - {metric: chars, aggregation: median, higher_is_better: false}
          - {metric: total, aggregation: !function utils.total}
        """))
    return folder


def test_pipelines_over_repeats_and_process_results(tmp_path):
    folder = _folder(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(reply=_reply) as srv:
        proc = run_cli("--tasks", "lmsc/pipes,lmsc/scored", "--include_path", str(folder), "--model",
                       f"openai:fake,base_url={srv.base_url}", "--output_path", str(out), "--no_report")
        assert proc.returncode == 0, proc.stderr
        sent = srv.completions()
    results = json.loads((out / "results.json").read_text())
    pipes = results["results"]["lmsc/pipes"]
    # strict: 1 ok, [invalid], 3 ok, 40 -> 2/4; flexible (the last number of repeat 0): 1, 2, 3, 40 -> 3/4;
    # maj@3 over the last numbers [1 1 7], [2 2 2], [3 9 8] (a tie: the first), [40 4 4] -> 4/4
    assert pipes["exact_match,strict-match"] == 0.5
    assert pipes["exact_match,flexible-extract"] == 0.75
    assert pipes["exact_match,maj@3"] == 1.0
    assert pipes["exact_match,maj@3_n"] == 4 and pipes["samples"] == 12  # scored once per sample, as lm-eval
    assert "exact_match" not in pipes
    scored = results["results"]["lmsc/scored"]
    # replies to repeat 0: "#### 1", "answer 5 or 2", "#### 3", "#### 40"
    assert scored["hit"] == 0.75
    assert scored["chars"] == 7 and scored["chars_stderr"] is None  # sorted [6, 6, 7, 13][2]
    assert scored["total"] == 3.0
    assert "unreported" not in scored
    assert results["metrics"]["lmsc/scored"]["chars"]["higher_is_better"] is False
    # the sample log keeps what each pipeline extracted, on the first repeat
    first = [json.loads(x) for x in (out / "samples" / "lmsc__pipes.jsonl").read_text().splitlines()]
    row = next(r for r in first if r["id"] == "3" and r["repeat"] == 0)
    assert row["extracted"] == {"strict-match": "40", "flexible-extract": "40", "maj@3": "4"}
    later = next(r for r in first if r["id"] == "3" and r["repeat"] == 2)
    assert later["scores"] == {} and later["flags"]["scored_with_repeat"] == 0
    # the note for should_decontaminate, once
    notes = json.loads((out / "run.json").read_text())["notes"]
    assert sum("should_decontaminate: accepted and ignored" in n for n in notes) == 1
    # lm-eval's generation keys reached the server as the chat API names them
    assert all(r.body["stop"] == ["\n"] and r.body["max_tokens"] == 16 for r in sent)
    assert sorted(r.body["seed"] for r in sent if "Q0" in echo_last_user(r.body)) == [1234, 1234, 1235, 1236]


def test_validate_refuses_a_filter_list_of_both_forms_and_unknown_step_names(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "t.yaml").write_text(textwrap.dedent("""\
        task: t
        doc_to_text: "{{q}}"
        filter_list:
          - {filter: strip}
          - name: strict
            filter:
              - function: regexx
        """))
    proc = run_cli("validate", str(folder))
    assert proc.returncode == 1
    assert "filter_list: mixes lm-eval pipelines" in proc.stdout
    assert "filter_list.1.filter.0.function: unknown filter 'regexx'; did you mean regex, regex_pos?" in proc.stdout
