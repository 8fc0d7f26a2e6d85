"""Mutation testing of the modules whose decisions decide the numbers avhb
reports (the resume journal and call key, the finished-task skip, the judge
reply parsers, the aggregates, the citation and agreement metrics, and each
pack's metrics), with cosmic-ray.

    nice -n 19 .venv/bin/python benchmarks/mutation.py            # every module
    nice -n 19 .venv/bin/python benchmarks/mutation.py aggregate  # one (or several)
    .venv/bin/python benchmarks/mutation.py --list                # modules and their test commands
    .venv/bin/python benchmarks/mutation.py --table               # the table of the last runs, running nothing

Why cosmic-ray: it mutates the file *in place* and runs a test command, so
the mutant is what the tests import.  tasks/, plugins/ and model_backends/
are importable only as avhb.tasks / avhb.plugins / avhb.model_backends
through the editable install's mapping; a tool that copies the tree
elsewhere (mutmut's mutants/ folder) would test the unmutated originals of
those.  Each module is checked before its run: a planted ``raise`` at the
end of the file must make its test command fail with that message, so a
module whose tests import a copy is refused, not reported as all-survived.

Per module (run one after another; a module's session database under
``--work`` makes a stopped run resumable, the same command continues it):

1. baseline: the module's test command under coverage (subprocesses
   included) must pass; its wall time sets the per-mutant timeout
   (``max(60 s, 3 x baseline)``);
2. probe: the planted ``raise`` (above);
3. ``cosmic-ray init``, then mutants are set aside (never run, listed as
   "set aside", not counted): inside a type annotation (every module here
   has ``from __future__ import annotations``: never evaluated), outside the
   module's scope (for caller.py only the key and the journal-hit
   decision), or an operator outside the chosen set (below);
4. mutants on a statement the tests never execute are survivors without a
   run (coverage says the tests cannot see them);
5. ``cosmic-ray exec``: each remaining mutant is applied, the test command
   run (``-x``: the first failing test kills it), the file restored.

Operator set (``--all-operators`` takes cosmic-ray's whole set): cosmic-ray
replaces every binary operator by each of the other eleven and every
comparison by each of the other eight; most of those are type errors that
any test kills (``str + str`` -> ``str >> str``).  Kept: the replacements a
plausible slip makes: ``+``<->``-``, ``*``<->``/``, ``/``->``//``, ``//``->``/``,
``%``->``//``, ``**``->``*``, ``|``<->``&``, ``^``->``&``, ``<<``<->``>>``; comparisons by
their boundary (``<``->``<=``, ``>``->``>=``, and back) and their negation (``==``<->``!=``,
``<``->``>=``, ``>``->``<=``, ``is``<->``is not``), and every other operator cosmic-ray has
(numbers, ``not`` added or removed, ``and``<->``or``, True<->False,
break<->continue, exception types, a loop that never iterates, a removed
decorator).

Counts: mutants = those run plus the unexecuted survivors; % killed =
killed / (killed + survived) (a timeout or an incompetent mutant, one the
tool could not apply or run, counts in neither).  Survivors (file:line, the
operator, the diff) go to ``--report`` (default .mutation/survivors.md), the
table to .mutation/table.md and .mutation/summary.json.

Interrupting is safe: the original text of the module being mutated is kept
in memory and in ``<work>/<name>.orig`` and written back when the run stops
(a run killed with SIGKILL is repaired by the next start).  Do not edit the
listed modules while a run is on: it mutates them in place.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = "avhb-mutation-probe"


@dataclass(frozen=True)
class Target:
    path: str  # relative to the repository root
    tests: tuple[str, ...]  # fastest and most targeted first: -x stops at the first failure
    scope: tuple[str, ...] = ()  # functions (Class.method) whose mutants count; () = the whole file
    note: str = ""


MODULES: dict[str, Target] = {
    "journal": Target("avhb/runfolder/journal.py", (
        "tests/runfolder/test_journal_union.py", "tests/runfolder/test_journal_reads.py", "tests/redact/test_redact_fast_path.py",
        "tests/runfolder/test_journal_edges.py", "tests/call/test_caller.py", "tests/redact/test_redact.py",
        "tests/cluster/test_shards.py", "tests/resume/test_resume_decisions.py", "tests/runfolder/test_run_folder.py")),
    "caller": Target("avhb/call/caller.py", (
        "tests/call/test_call_key_edges.py", "tests/call/test_caller.py", "tests/resume/test_stale_media.py",
        "tests/call/test_breaker.py", "tests/run/test_multistep.py", "tests/resume/test_resume_decisions.py"),
        scope=("_file_content", "_image_content", "part_reference", "media_files", "request_key", "Caller.call",
               "Caller.key", "Caller.answered"),
        note="the call key and the journal-hit decision"),
    # the content fingerprint every media part of a call key (and the media cache's key) holds
    "fingerprints": Target("avhb/media/fingerprints.py", (
        "tests/media/test_fingerprint_while_hashed.py", "tests/media/test_fingerprint_edges.py",
        "tests/media/test_fingerprints.py", "tests/call/test_caller.py", "tests/resume/test_stale_media.py")),
    "finished": Target("avhb/resume/finished.py", (
        "tests/resume/test_finished_edges.py", "tests/resume/test_fingerprint_options.py",
        "tests/resume/test_resume_decisions.py", "tests/resume/test_stale_media.py",
        "tests/run/test_evaluator.py", "tests/runfolder/test_run_folder.py")),
    # the one-configuration rule: which differences in a run folder are refused, re-scored or said
    "settings": Target("avhb/resume/setting_kinds.py", (
        "tests/resume/test_settings_edges.py", "tests/resume/test_fingerprint_options.py",
        "tests/runfolder/test_full_disk.py", "tests/resume/test_one_configuration.py",
        "tests/cluster/test_merge_accounting.py", "tests/resume/test_resume_decisions.py",
        "tests/resume/test_stale_media.py", "tests/cluster/test_shard_how_settings.py")),
    "parsers": Target("avhb/score/judge_replies.py", (
        "tests/score/test_parsers.py", "tests/score/test_letter_agreement.py", "tests/score/test_judge_reply_corpus.py",
        "tests/score/test_judge_fencing.py", "tests/plugins/test_metrics_likert.py",
        "tests/plugins/test_metrics_choice.py", "tests/examples/test_embedding_judge.py",
        "tests/score/test_judges_http.py")),
    # the letter parser alone (a part of the parsers' run, minutes instead of hours): a letter held to its option's text
    "letter": Target("avhb/score/judge_replies.py", (
        "tests/score/test_letter_agreement.py", "tests/score/test_judge_reply_corpus.py", "tests/score/test_parsers.py",
        "tests/plugins/test_metrics_choice.py", "tests/score/test_judges_http.py"),
        scope=("_option_norm", "_check_letter", "_text_option", "letter", "_strip_tail"),
        note="the letter parser and its option-text check"),
    "aggregate": Target("avhb/score/aggregate.py", (
        "tests/score/test_aggregate.py", "tests/runfolder/test_results.py", "tests/plugins/test_metrics_common.py",
        "tests/plugins/test_metrics_pairs.py", "tests/plugins/test_metrics_likert.py")),
    "citation": Target("plugins/metrics/citation.py", (
        "tests/plugins/test_metrics_citation.py", "tests/plugins/test_citation_edges.py", "tests/tasks/test_mmlongcite.py")),
    "agreement": Target("plugins/metrics/agreement.py", (
        "tests/plugins/test_metrics_agreement.py", "tests/plugins/test_agreement_edges.py", "tests/tasks/test_anchor.py")),
    # the packs' unit tests; their *_e2e files (a whole run through the CLI, minutes each) are left out
    "anchor": Target("tasks/anchor/metrics.py", (
        "tests/tasks/test_anchor_metric_edges.py", "tests/tasks/test_anchor.py")),
    # CURVE's accuracy is the built-in 0/1/2 judge (tasks/curve/metrics.py only renames it): its code is here
    "curve": Target("plugins/metrics/likert.py", (
        "tests/plugins/test_metrics_likert.py", "tests/tasks/test_curve.py"),
        scope=("valid_rating", "is_panel", "member_failures", "score_012", "_JudgedScale", "Judge012"),
        note="Judge012, which tasks/curve/metrics.py renames accuracy"),
    # HAVE's metrics: their unit tests, then the end-to-end runs that score (not the driver/resume ones), by
    # node id: a -k would filter the unit test files too
    "have": Target("tasks/have/metrics.py", (
        "tests/tasks/test_have_metric_edges.py", "tests/tasks/test_have.py",
        "tests/tasks/test_have_e2e.py::test_static_sample_pack_end_to_end_and_score_replays",
        "tests/tasks/test_have_e2e.py::test_interaction_sample_pack_end_to_end",
        "tests/tasks/test_have_e2e.py::test_three_repeats_report_their_spread")),
    "mmlongcite": Target("tasks/mmlongcite/metrics.py", (
        "tests/tasks/test_mmlongcite_metric_edges.py", "tests/tasks/test_mmlongcite.py")),
    "vidpair_metrics": Target("tasks/vidpair_halluc/metrics.py", (
        "tests/tasks/test_vidpair_metric_edges.py", "tests/tasks/test_vidpair_halluc.py")),
    "vidpair_scoring": Target("tasks/vidpair_halluc/scoring.py", (
        "tests/tasks/test_vidpair_metric_edges.py", "tests/tasks/test_vidpair_halluc.py")),
    "vidpair_extract": Target("tasks/vidpair_halluc/extract.py", ("tests/tasks/test_vidpair_halluc.py",)),
    # what keeps secrets out of every file, the run folder's writers, the error budget, and the pieces the
    # planted-bug survivors were in (issue 37)
    "redact": Target("avhb/redact.py", (
        "tests/redact/test_redact.py", "tests/redact/test_redact_edges.py", "tests/redact/test_redact_line.py",
        "tests/redact/test_redact_fast_path.py",
        "tests/redact/test_redact_folding.py", "tests/redact/test_run_secrets.py", "tests/backends/test_openai_backend.py",
        "tests/runfolder/test_journal_edges.py")),
    "openai_secrets": Target("model_backends/openai_backend.py", (
        "tests/backends/test_openai_credentials.py", "tests/redact/test_run_secrets.py",
        "tests/backends/test_openai_backend.py"),
        scope=("OpenAIBackend.__init__", "OpenAIBackend.identity", "OpenAIBackend.describe", "OpenAIBackend.classify",
               "split_userinfo"), note="the backend's credentials and what is redacted"),
    "atomic": Target("avhb/atomic.py", (
        "tests/test_atomic_edges.py", "tests/runfolder/test_full_disk.py", "tests/runfolder/test_run_folder.py")),
    "folder": Target("avhb/runfolder/folder.py", (
        "tests/runfolder/test_folder_edges.py", "tests/redact/test_redact_line.py", "tests/runfolder/test_full_disk.py",
        "tests/run/test_stream.py", "tests/runfolder/test_run_folder.py")),
    "lock_acquire": Target("avhb/runfolder/lock.py", (
        "tests/runfolder/test_lock_edges.py", "tests/runfolder/test_full_disk.py", "tests/runfolder/test_run_folder.py"),
        scope=("RunLock.acquire",), note="taking the run folder's lock (its write on a full disk)"),
    "budget": Target("avhb/run/budget.py", ("tests/run/test_error_budget.py", "tests/cluster/test_merge_accounting.py")),
    "evaluator_policy": Target("avhb/run/evaluator.py", (
        "tests/run/test_error_budget.py", "tests/runfolder/test_full_disk.py"),
        scope=("Evaluator.run", "Evaluator._write_report"), note="the error budget, a report that cannot be written"),
    "fewshot": Target("avhb/taskdef/fewshot.py", (
        "tests/taskdef/test_fewshot_first_n.py", "tests/taskdef/test_fewshot_draws.py", "tests/taskdef/test_fewshot.py",
        "tests/run/test_fewshot_runs.py")),
    "loglik_rolling": Target("plugins/metrics/loglik.py", (
        "tests/plugins/test_word_count.py", "tests/plugins/test_loglik_metrics.py",
        "tests/run/test_loglikelihood_runs.py"), scope=("_Rolling",),
        note="word_perplexity, byte_perplexity, bits_per_byte: the weight per sample"),
}

_BINARY_KEPT = {("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("Div", "FloorDiv"),
                ("FloorDiv", "Div"), ("Mod", "FloorDiv"), ("Pow", "Mul"), ("BitOr", "BitAnd"), ("BitAnd", "BitOr"),
                ("BitXor", "BitAnd"), ("LShift", "RShift"), ("RShift", "LShift")}
_COMPARISON_KEPT = {("Eq", "NotEq"), ("NotEq", "Eq"), ("Lt", "LtE"), ("Lt", "GtE"), ("LtE", "Lt"), ("LtE", "Gt"),
                    ("Gt", "GtE"), ("Gt", "LtE"), ("GtE", "Gt"), ("GtE", "Lt"), ("Is", "IsNot"), ("IsNot", "Is")}


def operator_kept(name: str) -> bool:
    found = re.fullmatch(r"core/Replace(Binary|Comparison)Operator_(\w+?)_(\w+)", name)
    if not found:
        return True
    kind, old, new = found.groups()
    return (old, new) in (_BINARY_KEPT if kind == "Binary" else _COMPARISON_KEPT)


def test_command(target: Target) -> list[str]:
    # plugin autoload off (pytest-benchmark, hypothesis, anyio: a second each, unused here); asyncio by name
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "pytest_asyncio.plugin",
            *target.tests]


def test_env() -> dict[str, str]:
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


# ---- the source: annotation spans, scopes, statements -----------------------------------------------------

def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _inside(pos: tuple[int, int], span) -> bool:
    return span[0] <= pos < span[1]


@dataclass
class Source:
    tree: ast.Module
    annotations: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)  # qualified name -> span
    statements: list = field(default_factory=list)  # (span, first line), innermost last after sorting

    @classmethod
    def read(cls, path: Path) -> "Source":
        tree = ast.parse(path.read_text())
        src = cls(tree)

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    src.functions[prefix + child.name] = _span(child)
                    visit(child, prefix + child.name + ".")
                else:
                    visit(child, prefix)

        visit(tree, "")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                src.annotations.append(_span(node.returns))
            elif isinstance(node, ast.arg) and node.annotation is not None:
                src.annotations.append(_span(node.annotation))
            elif isinstance(node, ast.AnnAssign):
                src.annotations.append(_span(node.annotation))
            if isinstance(node, ast.stmt):
                src.statements.append((_span(node), node.lineno))
        return src

    def in_annotation(self, pos) -> bool:
        return any(_inside(pos, s) for s in self.annotations)

    def in_scope(self, pos, scope: tuple[str, ...]) -> bool:
        return not scope or any(_inside(pos, self.functions[name]) for name in scope)

    def statement_line(self, pos) -> int | None:
        """First line of the innermost statement holding ``pos``."""
        best = None
        for span, line in self.statements:
            if _inside(pos, span) and (best is None or span[0] >= best[0][0]):
                best = (span, line)
        return best[1] if best else None


# ---- one module --------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    name: str
    path: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    unexecuted: int = 0  # survivors on statements the tests never run (part of survived)
    timeout: int = 0
    incompetent: int = 0
    set_aside: dict = field(default_factory=dict)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    probe: str = ""
    survivors: list = field(default_factory=list)

    @property
    def pct(self) -> float | None:
        done = self.killed + self.survived
        return 100.0 * self.killed / done if done else None


class Restorer:
    """Keeps the module's original text and writes it back, whatever stops the run."""

    def __init__(self, path: Path, backup: Path):
        self.path, self.backup = path, backup
        if backup.exists() and path.read_bytes() != backup.read_bytes():
            print(f"  restoring {path.relative_to(ROOT)} from {backup} (a previous run was killed mid-mutant)")
            path.write_bytes(backup.read_bytes())
        self.original = path.read_bytes()
        backup.write_bytes(self.original)

    def restore(self) -> None:
        if self.path.read_bytes() != self.original:
            self.path.write_bytes(self.original)
        self.backup.unlink(missing_ok=True)


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=test_env(), capture_output=True, text=True, **kw)


def _cosmic_ray() -> list[str]:
    return [sys.executable, "-c", "import sys; from cosmic_ray.cli import main; sys.exit(main())"]


def run_module(name: str, target: Target, work: Path, all_operators: bool, fresh: bool,
               retest: bool = False) -> Outcome:
    from cosmic_ray.work_db import WorkDB, use_db

    path = ROOT / target.path
    out = Outcome(name, target.path)
    wall0, cpu0 = time.perf_counter(), _cpu_children()
    restorer = Restorer(path, work / f"{name}.orig")
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_signal)
    server = None
    try:
        server = Server(target, work, name)
        for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
            pyc.unlink()
        db = work / f"{name}.sqlite"
        stamp = work / f"{name}.stamp"
        cmd = test_command(target)
        want = json.dumps({"source": hashlib.sha256(restorer.original).hexdigest(), "tests": cmd[1:],
                           "all_operators": all_operators})
        if retest:
            _retest_survivors(target, work, name, want, server)
        elif fresh or not db.exists() or not stamp.exists() or stamp.read_text() != want:
            db.unlink(missing_ok=True)
            stamp.unlink(missing_ok=True)
            timeout = _baseline(target, path, work, name, out, server)
            config = work / f"{name}.toml"
            config.write_text(
                "[cosmic-ray]\n"
                f"module-path = {json.dumps(target.path)}\n"
                f"timeout = {timeout:.0f}\n"
                "excluded-modules = []\n"
                f"test-command = {json.dumps(shlex.join(server.command(target)))}\n"
                "[cosmic-ray.distributor]\nname = \"local\"\n")
            proc = _run([*_cosmic_ray(), "init", str(config), str(db)])
            if proc.returncode != 0:
                raise SystemExit(f"mutation: cosmic-ray init failed for {target.path}:\n{proc.stderr[-2000:]}")
            _set_aside(db, target, path, work / f"{name}.missing.json", all_operators)
            stamp.write_text(want)
        else:
            out.probe = (work / f"{name}.probe").read_text() if (work / f"{name}.probe").exists() else ""
            print(f"  {name}: resuming the session in {db}")
        config = work / f"{name}.toml"
        with use_db(str(db), WorkDB.Mode.open) as wdb:
            pending = sum(1 for _ in wdb.pending_work_items)
        print(f"  {name}: {pending} mutants to run", flush=True)
        if pending:
            proc = subprocess.run([*_cosmic_ray(), "exec", str(config), str(db)], cwd=ROOT, env=test_env(),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                print(f"  {name}: cosmic-ray exec exited {proc.returncode}: {proc.stderr[-1500:]}")
    except KeyboardInterrupt:
        restorer.restore()
        raise SystemExit(f"mutation: stopped ({'signal %s' % stop['signal'] if stop['signal'] else 'interrupted'});"
                         f" {target.path} restored; the same command resumes") from None
    finally:
        restorer.restore()
        if server is not None:
            server.close()
        signal.signal(signal.SIGTERM, old_term)
    out.wall_s = time.perf_counter() - wall0
    out.cpu_s = _cpu_children() - cpu0
    _times_add(work, name, out.wall_s, out.cpu_s)
    return collect(name, target, work, out)


def _retest_survivors(target: Target, work: Path, name: str, want: str, server: "Server") -> None:
    """Tests were added (none removed or changed): a killed mutant stays
    killed, so only the survivors are run again, with the current test
    command (which must pass on the unmutated code)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome

    db, stamp, config = work / f"{name}.sqlite", work / f"{name}.stamp", work / f"{name}.toml"
    if not db.exists() or not stamp.exists():
        raise SystemExit(f"mutation: --retest-survivors: no session of {name} in {work} to retest")
    old, new = json.loads(stamp.read_text()), json.loads(want)
    if old["source"] != new["source"] or old["all_operators"] != new["all_operators"]:
        raise SystemExit(f"mutation: --retest-survivors: {target.path} (or the operator set) changed since the"
                         " session was made; run it afresh (--fresh)")
    missing = [t for t in old["tests"][3:] if t.endswith(".py") and t not in new["tests"]]
    if missing:
        raise SystemExit(f"mutation: --retest-survivors: the test command lost {', '.join(missing)}; run afresh")
    start = time.perf_counter()
    clean = _run(server.command(target), timeout=600)
    wall = time.perf_counter() - start
    if clean.returncode != 0:
        raise SystemExit(f"mutation: the tests of {target.path} fail unmutated:\n{clean.stdout[-3000:]}")
    text = config.read_text()
    old_timeout = float(re.search(r"(?m)^timeout = (\S+)$", text).group(1))  # more tests may take longer
    text = re.sub(r"(?m)^timeout = .*$", f"timeout = {max(old_timeout, 60.0, 4 * wall):.0f}", text)
    text = re.sub(r"(?m)^test-command = .*$", lambda _m: f"test-command = {json.dumps(shlex.join(server.command(target)))}",
                  text)
    config.write_text(text)
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        again = [job for job, result in ((i.job_id, r) for i, r in wdb.completed_work_items)
                 if result.test_outcome == TestOutcome.SURVIVED]
    import sqlite3

    with sqlite3.connect(db) as con:  # forget those results: cosmic-ray exec runs what has none
        con.executemany("DELETE FROM work_results WHERE job_id = ?", [(j,) for j in again])
    stamp.write_text(want)
    print(f"  {name}: retesting {len(again)} survivors with {shlex.join(test_command(target)[3:])}", flush=True)


def _baseline(target: Target, path: Path, work: Path, name: str, out: Outcome, server: "Server") -> float:
    """Tests pass unmutated (under coverage: which statements they run), and a
    planted raise in the module fails them (they import this very file)."""
    rc = work / f"{name}.coveragerc"
    data = work / f"{name}.coverage"
    for old in work.glob(f"{name}.coverage*"):
        old.unlink()
    rc.write_text(f"[run]\ndata_file = {data}\nparallel = true\npatch = subprocess\n"
                  f"include = {path}\nbranch = false\n")
    cmd = test_command(target)
    start = time.perf_counter()
    proc = _run([sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", *cmd[1:]])
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"mutation: the tests of {target.path} fail unmutated ({shlex.join(cmd[3:])}):\n"
                         f"{proc.stdout[-3000:]}{proc.stderr[-1000:]}")
    _run([sys.executable, "-m", "coverage", "combine", f"--rcfile={rc}", "-q"])
    import coverage

    cov = coverage.Coverage(config_file=str(rc), data_file=str(data))
    cov.load()
    _file, statements, _excluded, missing, _fmt = cov.analysis2(str(path))
    (work / f"{name}.missing.json").write_text(json.dumps(sorted(missing)))
    print(f"  {name}: baseline passed in {wall:.0f} s; the tests run {len(statements) - len(missing)}"
          f"/{len(statements)} statements", flush=True)

    clean = _run(server.command(target), timeout=max(120, 3 * wall))
    if clean.returncode != 0:  # the fork server must give the outcome a fresh process gives
        raise SystemExit(f"mutation: the tests of {target.path} pass alone but fail through the test server:\n"
                         f"{clean.stdout[-3000:]}")
    text = path.read_text()
    try:
        path.write_text(text + f"\nraise RuntimeError({PROBE!r})\n")
        probe = _run(server.command(target), timeout=max(120, 3 * wall))  # the path every mutant takes
    finally:
        path.write_text(text)
    seen = PROBE in probe.stdout + probe.stderr
    if probe.returncode == 0:
        raise SystemExit(f"mutation: a raise planted in {target.path} did not fail its tests: they do not import"
                         " this file (an installed copy?); nothing would be measured")
    out.probe = "planted raise: tests failed" + (", its message in their output" if seen else
                                                  " (message not in the output: raised in a subprocess)")
    (work / f"{name}.probe").write_text(out.probe)
    print(f"  {name}: {out.probe}", flush=True)
    return max(60.0, 3 * wall)


def _set_aside(db: Path, target: Target, path: Path, missing_file: Path, all_operators: bool) -> None:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    src = Source.read(path)
    missing = set(json.loads(missing_file.read_text()))
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        for item in list(wdb.pending_work_items):
            (m,) = item.mutations
            pos = tuple(m.start_pos)
            reason = None
            if src.in_annotation(pos):
                reason = "set aside: type annotation"
            elif not src.in_scope(pos, target.scope):
                reason = "set aside: outside scope"
            elif not all_operators and not operator_kept(m.operator_name):
                reason = "set aside: operator"
            if reason:
                wdb.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=reason))
                continue
            line = src.statement_line(pos)
            if line in missing:
                wdb.set_result(item.job_id, WorkResult(
                    worker_outcome=WorkerOutcome.NORMAL, test_outcome=TestOutcome.SURVIVED,
                    output=f"unexecuted: the statement at line {line} never runs in these tests"))


def _times_add(work: Path, name: str, wall: float, cpu: float) -> None:
    """Time spent on a module, summed over resumed runs (one file a module: runs of
    different modules may share a work folder)."""
    f = work / f"{name}.times.json"
    old = json.loads(f.read_text()) if f.exists() else {"wall_s": 0.0, "cpu_s": 0.0}
    f.write_text(json.dumps({"wall_s": old["wall_s"] + wall, "cpu_s": old["cpu_s"] + cpu}))


def collect(name: str, target: Target, work: Path, out: Outcome | None = None) -> Outcome:
    """Counts and survivors from a module's session database."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    out = out or Outcome(name, target.path)
    db = work / f"{name}.sqlite"
    probe = work / f"{name}.probe"
    out.probe = out.probe or (probe.read_text() if probe.exists() else "")
    f = work / f"{name}.times.json"
    times = json.loads(f.read_text()) if f.exists() else {}
    out.wall_s, out.cpu_s = times.get("wall_s", 0.0), times.get("cpu_s", 0.0)
    if not db.exists():
        return out
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        for item, result in wdb.completed_work_items:
            (m,) = item.mutations
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                out.set_aside[result.output] = out.set_aside.get(result.output, 0) + 1
                continue
            if result.worker_outcome == WorkerOutcome.NO_TEST:
                continue  # cosmic-ray found nothing to change at that occurrence
            out.mutants += 1
            if result.worker_outcome != WorkerOutcome.NORMAL or result.test_outcome == TestOutcome.INCOMPETENT:
                out.incompetent += 1
            elif result.test_outcome == TestOutcome.KILLED and (result.output or "").strip() == "timeout":
                out.timeout += 1
            elif result.test_outcome == TestOutcome.KILLED:
                out.killed += 1
            else:
                out.survived += 1
                unexecuted = (result.output or "").startswith("unexecuted:")
                out.unexecuted += unexecuted
                out.survivors.append({"line": m.start_pos[0], "col": m.start_pos[1], "operator": m.operator_name,
                                      "occurrence": m.occurrence, "unexecuted": unexecuted,
                                      "diff": result.diff or _diff_of(m)})
    out.survivors.sort(key=lambda s: (s["line"], s["col"], s["operator"]))
    return out


def _diff_of(m) -> str:
    """The mutant's diff, made again (cosmic-ray records none for a mutant it never ran)."""
    import difflib

    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    path = ROOT / m.module_path
    code = path.read_text()
    try:
        op = cosmic_ray.plugins.get_operator(m.operator_name)(**(m.operator_args or {}))
        mutated = mutate_code(code, op, m.occurrence)
    except Exception as exc:  # the report still names file:line and operator
        return f"(diff unavailable: {exc})"
    if mutated is None:
        return "(no change)"
    return "".join(difflib.unified_diff(code.splitlines(True), mutated.splitlines(True), n=0))


# ---- a fork server: the test command's imports loaded once -----------------------------------------------
#
# Most of a mutant's test run is start-up: Python, pytest, and the libraries the tests import (scikit-learn
# and statsmodels alone take seconds).  The server imports those once -- never avhb or anything under the
# repository, which each run must import from the (mutated) file -- and forks a fresh child per mutant that
# runs pytest.main.  cosmic-ray's test command is the small client (``--client``); a client killed for a
# timeout hangs up, and the server kills that child's process group.

def _preload_names(target: Target) -> list[str]:
    """Top-level modules a collection of the tests imports that are not the project's."""
    code = ("import sys, pytest, json\n"
            f"pytest.main(['-q', '--collect-only', '-p', 'no:cacheprovider', '-p', 'pytest_asyncio.plugin', "
            f"*{list(target.tests)!r}])\n"
            f"root = {str(ROOT)!r}\n"
            "names = set()\n"
            "for name, mod in list(sys.modules.items()):\n"
            "    top = name.split('.')[0]\n"
            "    f = getattr(mod, '__file__', None) or ''\n"
            "    if top in ('avhb', 'tests', 'conftest') or top.startswith(('test_', '_pytest', 'avhb')) or f.startswith(root):\n"
            "        continue\n"
            "    if f.startswith(root) or top == '__main__' or any(part.startswith('_') for part in name.split('.')):\n"
            "        continue\n"
            "    names.add(name)\n"
            "print('PRELOAD=' + json.dumps(sorted(names)))\n")
    proc = _run([sys.executable, "-c", code])
    for line in proc.stdout.splitlines():
        if line.startswith("PRELOAD="):
            return json.loads(line[len("PRELOAD="):])
    return []


def serve(sock_path: str, preload: list[str]) -> None:
    import importlib
    import select
    import socket
    import tempfile

    import pytest  # noqa: F401

    for name in preload:
        try:
            importlib.import_module(name)
        except BaseException:  # a module that cannot be imported alone is imported by the child
            pass
    loaded = [m for m in sys.modules if m.split(".")[0] == "avhb"]
    if loaded:  # a preloaded library imported the project: the child would see the unmutated module
        for m in loaded:
            del sys.modules[m]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            buf += chunk
        if not buf.strip():
            conn.close()
            continue
        req = json.loads(buf)
        if req.get("stop"):
            conn.close()
            break
        out = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:  # the child: one pytest run
            code = 3
            try:
                srv.close()
                conn.close()
                os.setpgid(0, 0)
                os.chdir(req["cwd"])
                os.environ.clear()
                os.environ.update(req["env"])
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                import pytest as _pytest

                code = int(_pytest.main(req["args"]))
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        code = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            ready, _, _ = select.select([conn], [], [], 0.05)
            if ready and not conn.recv(1):  # the client was killed (a timeout): so is the run
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                os.waitpid(pid, 0)
                break
        try:
            os.killpg(pid, signal.SIGKILL)  # anything the tests left running
        except OSError:
            pass
        if code is not None:
            out.seek(0)
            try:
                conn.sendall(json.dumps({"code": code, "output": out.read().decode(errors="replace")[-20000:]}).encode())
            except OSError:
                pass
        out.close()
        conn.close()


def client(sock_path: str, args: list[str]) -> int:
    import socket

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock_path)
    conn.sendall(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ), "args": args}).encode() + b"\n")
    buf = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    if not buf:
        print("mutation: the test server hung up", file=sys.stderr)
        return 3
    reply = json.loads(buf)
    sys.stdout.write(reply["output"])
    return reply["code"]


class Server:
    def __init__(self, target: Target, work: Path, name: str):
        self.sock = str(work / f"{name}.sock")
        Path(self.sock).unlink(missing_ok=True)
        preload = _preload_names(target)
        env = {**test_env(), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", self.sock,
                                      "--preload", json.dumps(preload)], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("mutation: the test server did not start")

    def command(self, target: Target) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--client", self.sock, "--", *test_command(target)[3:]]

    def close(self) -> None:
        import socket

        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(self.sock)
            conn.sendall(b'{"stop": true}\n')
            conn.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        Path(self.sock).unlink(missing_ok=True)


# ---- report ------------------------------------------------------------------------------------------------

def table(outcomes: list[Outcome]) -> str:
    rows = ["| module | mutants | killed | survived (unexecuted) | timeout/incompetent | % killed | set aside | wall s | CPU s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tot = Outcome("all", "")
    for o in outcomes:
        pct = "-" if o.pct is None else f"{o.pct:.1f}"
        rows.append(f"| {o.path} | {o.mutants} | {o.killed} | {o.survived} ({o.unexecuted}) | "
                    f"{o.timeout}/{o.incompetent} | {pct} | {sum(o.set_aside.values())} | {o.wall_s:.0f} | {o.cpu_s:.0f} |")
        for k in ("mutants", "killed", "survived", "unexecuted", "timeout", "incompetent", "wall_s", "cpu_s"):
            setattr(tot, k, getattr(tot, k) + getattr(o, k))
        tot.set_aside[""] = tot.set_aside.get("", 0) + sum(o.set_aside.values())
    if len(outcomes) > 1:
        pct = "-" if tot.pct is None else f"{tot.pct:.1f}"
        rows.append(f"| **all** | {tot.mutants} | {tot.killed} | {tot.survived} ({tot.unexecuted}) | "
                    f"{tot.timeout}/{tot.incompetent} | {pct} | {sum(tot.set_aside.values())} | {tot.wall_s:.0f} | {tot.cpu_s:.0f} |")
    return "\n".join(rows)


def survivors_report(outcomes: list[Outcome]) -> str:
    parts = ["# Surviving mutants\n", "Each: file:line:col, cosmic-ray operator (occurrence), and the diff. "
             "'unexecuted': the tests never run that statement.\n"]
    for o in outcomes:
        parts.append(f"\n## {o.name}: {o.path} ({o.survived} survivors of {o.mutants}; probe: {o.probe or '-'})\n")
        for s in o.survivors:
            tag = " [unexecuted]" if s["unexecuted"] else ""
            diff = "\n".join(line for line in s["diff"].splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
            parts.append(f"- `{o.path}:{s['line']}:{s['col']}` {s['operator']} #{s['occurrence']}{tag}\n"
                         f"```diff\n{diff}\n```")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--client"]:  # cosmic-ray's test command (Server.command)
        return client(argv[1], argv[3:])
    if argv[:1] == ["--serve"]:
        serve(argv[1], json.loads(argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help=f"names (default: all): {', '.join(MODULES)}")
    ap.add_argument("--work", type=Path, default=ROOT / ".mutation", help="session databases and reports")
    ap.add_argument("--report", type=Path, default=None, help="survivors file (default WORK/survivors.md)")
    ap.add_argument("--all-operators", action="store_true", help="cosmic-ray's whole operator set")
    ap.add_argument("--fresh", action="store_true", help="start the named modules over (default: resume)")
    ap.add_argument("--retest-survivors", action="store_true",
                    help="after tests were added (none removed): run only the recorded survivors again")
    ap.add_argument("--list", action="store_true", help="print the modules and their test commands")
    ap.add_argument("--table", action="store_true", help="print the table of the recorded sessions; run nothing")
    args = ap.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        ap.error(f"unknown module {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    if args.list:
        for n in names:
            t = MODULES[n]
            scope = f"  (scope: {', '.join(t.scope)})" if t.scope else ""
            print(f"{n}: {t.path}{scope}\n    {shlex.join(test_command(t)[1:])}")
        return 0
    try:
        import cosmic_ray  # noqa: F401
        import coverage  # noqa: F401
    except ImportError as exc:
        print(f"mutation: error: {exc.name} is not installed (pip install -e '.[mutation]')", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    outcomes = []
    refused: list[str] = []
    for n in names:
        if args.table:
            outcomes.append(collect(n, MODULES[n], args.work))
            continue
        print(f"{n}: {MODULES[n].path}", flush=True)
        try:
            outcomes.append(run_module(n, MODULES[n], args.work, args.all_operators, args.fresh, args.retest_survivors))
        except SystemExit as exc:  # this module is refused (its tests fail, or do not import it): the others run
            if "stopped (" in str(exc):
                raise
            print(exc, flush=True)
            refused.append(f"{n}: {exc}")
            continue
        print(table(outcomes[-1:]).splitlines()[-1], flush=True)
    text = table(outcomes)
    print("\n" + text)
    if not args.table:
        # the files hold every module with a session, not only this invocation's
        everything = [collect(n, MODULES[n], args.work) for n in MODULES if (args.work / f"{n}.sqlite").exists()]
        report = args.report or args.work / "survivors.md"
        report.write_text(survivors_report(everything))
        (args.work / "table.md").write_text(table(everything) + "\n")
        (args.work / "summary.json").write_text(json.dumps(
            [{k: v for k, v in o.__dict__.items() if k != "survivors"} | {"pct_killed": o.pct} for o in everything],
            indent=1))
        print(f"\nsurvivors: {report}\ntable: {args.work / 'table.md'}")
    for line in refused:
        print(line, file=sys.stderr)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
