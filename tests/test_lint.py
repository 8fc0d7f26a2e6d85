"""The tree is lint-clean: ``ruff check .`` at the rule set pyproject.toml's
``[tool.ruff]`` states (pyflakes, pycodestyle E/W, bugbear), as scripts/test.sh
runs it before the tests."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    assert importlib.util.find_spec("ruff") is not None, "ruff is not installed: pip install -e '.[test]'"
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "--config", str(REPO / "pyproject.toml"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_tree_is_ruff_clean():
    done = _ruff(".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_fails_on_a_planted_finding(tmp_path):
    """The same configuration fails on an unused import, an undefined name,
    a mutable default and a line past the ceiling, so the test above cannot
    pass vacuously."""
    bad = tmp_path / "planted.py"
    bad.write_text("import os\n\n\ndef f(seen=[]):\n    return undefined_name\n\n\n"
                   f"TEXT = '{'x' * 150}'\n", encoding="utf-8")
    done = _ruff(str(bad), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for code in ("F401", "F821", "B006", "E501"):
        assert f" {code} " in done.stdout, (code, done.stdout)
