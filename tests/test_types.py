"""The core type-checks clean: ``python -m mypy`` over avhb/ at the level
pyproject.toml's ``[tool.mypy]`` states (``check_untyped_defs``: every
function body checked, annotated or not; docs/design.md, "Types").  The
cache lives in .mypy_cache, so a rerun checks only what changed."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _mypy(*paths: str) -> subprocess.CompletedProcess[str]:
    assert importlib.util.find_spec("mypy") is not None, "mypy is not installed: pip install -e '.[test]'"
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                           "--cache-dir", str(REPO / ".mypy_cache"), "--no-color-output", *paths],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


def test_the_core_is_mypy_clean():
    done = _mypy()  # the files pyproject.toml names: avhb/
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, done.stdout + done.stderr


def test_the_check_reads_untyped_bodies_and_fails_on_an_error(tmp_path):
    """The same invocation fails on a planted error inside an unannotated
    function (found only at the stated level), so the test above cannot
    pass vacuously."""
    bad = tmp_path / "planted.py"
    bad.write_text("def f():\n    count: int = 'three'\n    return count\n", encoding="utf-8")
    done = _mypy(str(bad))
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'planted.py:2: error: Incompatible types in assignment (expression has type "str", variable has type "int")' \
        in done.stdout, done.stdout
