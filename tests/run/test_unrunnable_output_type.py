"""A task whose output type avhb loads but does not run (lmms-eval's
``generate_visual_cot``, ``generate_until_multi_round``,
``generate_until_agentic``) refuses its run in one line, exit 2, naming
the task, the output type and why: before any model call, before the cost
estimate, and with no samples written."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer


def _folder(tmp_path: Path, kind: str) -> Path:
    folder = tmp_path / "unig2ulike"
    folder.mkdir()
    (folder / "test.jsonl").write_text("".join(json.dumps({"q": q, "answer": a}) + "\n"
                                               for q, a in [("Colour of the sky?", "blue"), ("Of grass?", "green")]))
    (folder / "draw.yaml").write_text(textwrap.dedent(f"""\
        task: draw_then_answer
        dataset_path: json
        dataset_kwargs: {{data_files: {folder / 'test.jsonl'}}}
        test_split: train
        output_type: {kind}
        doc_to_text: "{{{{q}}}}"
        doc_to_target: answer
        metric_list:
          - metric: exact_match
        """))
    return folder


@pytest.mark.parametrize("kind, why", [
    ("generate_visual_cot", "the model first generates an image (lmms-eval's image-generation models only); "
                            "avhb's backends answer in text"),
    ("generate_until_multi_round", "lmms-eval leaves the rounds to each model class"),
    ("generate_until_agentic", "lmms-eval's agentic loop lives in its evaluator"),
])
def test_a_run_of_an_output_type_avhb_does_not_run_is_refused_in_one_line(tmp_path, kind, why):
    folder = _folder(tmp_path, kind)
    out = tmp_path / "run"
    with ScriptedServer() as srv:
        proc = run_cli("--tasks", "unig2ulike/draw_then_answer", "--include_path", str(folder), "--model",
                       f"openai:fake,base_url={srv.base_url}", "--output_path", str(out), "--no_report",
                       env={"AVHB_CACHE_DIR": str(tmp_path / "cache")})
        assert srv.count == 0
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1, line  # no estimate, no notes, no traceback
    assert line.startswith(f"avhb: error: task 'unig2ulike/draw_then_answer' cannot run in avhb: output_type {kind}: "
                           f"{why}"), line
    assert not list(out.glob("samples/*")) and not (out / "results.json").exists()
