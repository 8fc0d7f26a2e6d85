"""Every command in ``docs/cluster.md`` runs, in its local form.

Each ``bash`` block of the page is marked: ``<!-- local form: NAME -->``
(this file runs it, as written: only ``/tmp`` folders and ports are
replaced by private ones) or ``<!-- cluster form, run as: NAME -->`` (a
command for a real cluster; NAME is the local form standing for it).  An
unmarked block, or a cluster form naming no local form, fails here.  The
outputs the page shows next to a local form are checked against what it
prints.  The vLLM forms need the vLLM venv (``scripts/vllm_env.sh``;
``AVHB_VLLM_VENV``) and are skipped without it; the SLURM preemption form
needs a UTS namespace (root).
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cluster.md"
_BLOCK = re.compile(r"(?:<!-- (local form|cluster form, run as): ([\w-]+) -->\n)?```bash\n(.*?)```\n", re.S)


def blocks() -> list[tuple[str | None, str | None, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def local_form(name: str) -> str:
    (text,) = [t for kind, n, t in blocks() if kind == "local form" and n == name]
    return text


def shown_after(name: str) -> str:
    """The output block the page shows after local form ``name``."""
    doc = DOC.read_text(encoding="utf-8")
    at = doc.index(f"<!-- local form: {name} -->")
    m = re.compile(r"```bash\n.*?```\n.*?```\n(.*?)```", re.S).search(doc, at)
    return m.group(1)


def test_every_bash_block_is_a_local_form_or_names_one():
    found = blocks()
    assert len(found) >= 10
    unmarked = [text.splitlines()[0] for kind, _, text in found if kind is None]
    assert not unmarked, f"bash blocks neither run here nor naming their local form: {unmarked}"
    local = [n for kind, n, _ in found if kind == "local form"]
    assert len(local) == len(set(local))
    for kind, name, text in found:
        if kind != "local form":
            assert name in local, f"{text.splitlines()[0]!r} names local form {name!r}, which the page lacks"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "AVHB_LOCK"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)  # the blocks set what they need
    return {**env, **extra}


def _bash(script: str, tmp: Path, timeout: float = 600, paths: dict[str, str] | None = None,
          **env: str) -> subprocess.CompletedProcess:
    """The page's block with its scratch paths (/tmp/...) under ``tmp``,
    then ``paths`` put in (after, so a checkout under /tmp stays where it is)."""
    script = script.replace("/tmp/", f"{tmp}/")
    for name, path in (paths or {}).items():
        script = script.replace(name, path)
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=_env(**env), capture_output=True, text=True,
                          timeout=timeout)


def _parts(out: str, names: list[str]) -> dict[str, str]:
    pieces = re.split(r"^=== (\S+)\n", out, flags=re.M)
    return dict(zip(pieces[1::2], pieces[2::2])) if len(pieces) > 1 else {}


@pytest.mark.slow  # sbatch forms through the shim: about 20 s
def test_the_slurm_local_forms(tmp_path):
    """slurm-local (4 shards, merged, equal to the unsharded run), then in
    the same shell merge-missing and slurm-resubmit, as the page runs them."""
    names = ["slurm-local", "merge-missing", "slurm-resubmit"]
    script = "".join(f"echo '=== {n}'; echo '=== {n}' >&2\n{local_form(n)}" for n in names)
    proc = _bash(script, tmp_path)
    out, err = _parts(proc.stdout, names), _parts(proc.stderr, names)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert out["slurm-local"].splitlines()[-1] == "same", proc.stderr[-4000:]
    slurm = tmp_path / "avhb-slurm"
    for task in ("vidpair_binary", "vidpair_mcq", "vidpair_open"):
        assert (slurm / "merged" / "samples" / f"{task}.jsonl").read_bytes() == \
               (slurm / "unsharded" / "samples" / f"{task}.jsonl").read_bytes()
    pairs = [len({json.loads(line)["doc"]["pair_id"] for line in
                  (slurm / f"shard-{i}" / "samples" / "vidpair_binary.jsonl").read_text().splitlines()})
             for i in range(4)]
    assert pairs == [2, 0, 2, 0]  # as the page says
    shown = shown_after("merge-missing").strip().replace("/tmp/", f"{tmp_path}/")
    assert shown in err["merge-missing"].splitlines()
    assert "merge exit 2" in out["slurm-resubmit"] and out["slurm-resubmit"].splitlines()[-1] == "merged"
    assert "avhb: error: shard 2/4 missing (given: 0/4" in err["slurm-resubmit"]
    assert json.loads((slurm / "shard-2" / "run.json").read_text())["shard"] == {"index": 2, "count": 4}


def _uts_namespaces() -> bool:
    try:
        return subprocess.run(["unshare", "--uts", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow  # a preempted and requeued job: about 30 s
@pytest.mark.skipif(not _uts_namespaces(), reason="unshare --uts needs root (the preemption is tested without it "
                                                  "in tests/cluster/test_preemption.py)")
def test_the_slurm_preemption_local_form(tmp_path):
    proc = _bash(local_form("slurm-preempt"), tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert "exit 143" in lines and lines[-1] == "resumed", proc.stdout
    assert lines.index("exit 143") < [i for i, line in enumerate(lines) if line.startswith("| testpack/qa_easy")][-1]
    assert "avhb: SIGTERM: finishing the calls in flight (up to 20 s), sending no new ones" in proc.stderr
    assert re.search(r"avhb: stopped by SIGTERM: the calls in flight finished and were journaled, \d+ samples not "
                     r"attempted; the run folder's lock is released", proc.stderr), proc.stderr[-3000:]
    journal = tmp_path / "avhb-preempt" / "shard-0" / "journal" / "responses.jsonl"
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 120  # every call once: none asked twice
    run = json.loads((tmp_path / "avhb-preempt" / "shard-0" / "run.json").read_text())
    assert run["shard"] == {"index": 0, "count": 1}
    print([line for line in proc.stderr.splitlines() if "stopped by" in line or "note:" in line])


@pytest.mark.slow  # a local Ray cluster: about 35 s
def test_the_ray_local_form(tmp_path):
    pytest.importorskip("ray")
    head, server = _free_port(), _free_port()
    script = local_form("ray-local").replace("6390", str(head)).replace("8765", str(server))
    proc = _bash(script, tmp_path, timeout=900, RAY_USAGE_STATS_ENABLED="0")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"avhb: ray cluster 127.0.0.1:{head}: 2 nodes, 2 CPUs, 0 GPUs" in proc.stderr
    assert re.search(r"avhb: ray worker 1 for openai:fake: pid \d+ on ", proc.stderr)
    table = [line for line in shown_after("ray-local").splitlines() if line.startswith("| testpack/qa_easy")]
    assert table and table[0] in proc.stdout, proc.stdout


def _vllm_venv() -> Path:
    return Path(os.environ.get("AVHB_VLLM_VENV") or ROOT / ".venv-vllm")


def _vllm_block(name: str, tmp: Path) -> subprocess.CompletedProcess:
    venv = _vllm_venv()
    if not (venv / "bin" / "avhb").exists():
        pytest.skip(f"no vLLM venv at {venv} (scripts/vllm_env.sh; AVHB_VLLM_VENV)")
    # the venv's avhb from this tree (its editable install may be another checkout's)
    return _bash(local_form(name), tmp, timeout=1800, paths={".venv-vllm": str(venv)}, PYTHONPATH=str(ROOT))


@pytest.mark.slow  # the vLLM venv (scripts/vllm_env.sh) runs the checks: about 30 s
def test_the_vllm_checks_local_form(tmp_path):
    proc = _vllm_block("vllm-checks", tmp_path)
    got = re.sub(r"--model vllm:\S+?: ", "--model vllm:$M: ", proc.stderr)  # the page names the folder $M
    printed = [line for line in (proc.stdout + got).splitlines() if line.startswith(("ARGS=", "avhb: error: "))]
    shown = [line for line in shown_after("vllm-checks").splitlines() if line.startswith("avhb: error: ")]
    assert len(shown) == 6
    for line in shown:
        assert line in got, f"{line!r} not printed:\n{got[-4000:]}"
    assert len([p for p in printed if p.startswith("avhb: error: ")]) == 6


@pytest.mark.slow
def test_the_vllm_throughput_local_form(tmp_path):
    proc = _vllm_block("vllm-throughput", tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # identical, or within the benchmark's near-tie allowance (it exits 1 past it; the count is printed)
    assert proc.stdout.count("outputs identical in every round: ") == 3, proc.stdout[-4000:]
    assert proc.stdout.count("; errors: none") == 3, proc.stdout[-4000:]
