"""The version is written once, in avhb/version.py: the package metadata a
build writes (a wheel's and an editable install's) carries that string, and
the installed avhb's metadata equals ``avhb.__version__``."""
from __future__ import annotations

import email.parser
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import avhb

REPO = Path(__file__).resolve().parents[1]


def test_the_installed_metadata_is_avhb_version():
    assert importlib.metadata.version("avhb") == avhb.__version__


def _tree_with_version(tmp_path: Path, version: str) -> Path:
    """The project's build inputs, linked, with avhb/version.py saying ``version``."""
    tree = tmp_path / "tree"
    (tree / "avhb").mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md", "tasks", "plugins", "model_backends"):
        os.symlink(REPO / name, tree / name)
    for entry in (REPO / "avhb").iterdir():
        if entry.name not in ("version.py", "__pycache__"):
            os.symlink(entry, tree / "avhb" / entry.name)
    (tree / "avhb" / "version.py").write_text(f'__version__ = "{version}"\n', encoding="utf-8")
    return tree


@pytest.mark.parametrize("hook", ["prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable"])
def test_a_build_takes_its_version_from_avhb_version_py(tmp_path, hook):
    tree = _tree_with_version(tmp_path, "9.8.7")
    out = tmp_path / "meta"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", f"import sys; from setuptools import build_meta as b; "
                           f"print(b.{hook}(sys.argv[1]))", str(out)],
                          cwd=tree, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    dist_info = out / done.stdout.strip().splitlines()[-1]
    meta = email.parser.Parser().parsestr((dist_info / "METADATA").read_text(encoding="utf-8"))
    assert (meta["Name"], meta["Version"]) == ("avhb", "9.8.7")
