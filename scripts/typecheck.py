"""Type-checks every module the wheel ships, under the name it installs as.

``tasks/``, ``plugins/`` and ``model_backends/`` install as ``avhb.tasks``,
``avhb.plugins`` and ``avhb.model_backends`` (``setup.py``'s ``MAPPED``),
a rename mypy cannot be told (``mypy_path`` and ``explicit_package_bases``
name search roots, not a folder's package), and mypy does not run the
editable install's import hook (``mypy -p avhb.tasks``: "Can't find
package").  So this builds the installed layout from symlinks: a real
folder per package, ``avhb/`` with a link to each entry of the core's
``avhb/``, ``avhb/tasks/`` (likewise ``plugins``, ``model_backends``) with a
link to each entry of its folder, and mypy checks that ``avhb`` at the
settings of pyproject.toml's ``[tool.mypy]``, reporting the repository's
paths (``tasks/have/metrics.py:12: error: ...``).

The layout is rebuilt on every run in one place, ``.mypy_cache/shipped/``
(git ignores it), with mypy's cache beside it: mypy keeps a module's
messages in its cache under the path it was checked at, so the path must
not change between runs.  A lock serialises runs that share the folder.

    python scripts/typecheck.py [MYPY_OPTION...]

exits with mypy's status (0: no errors).  ``tests/test_types.py`` runs it;
``python -m mypy`` alone checks the core (``files = ["avhb"]``).
"""
from __future__ import annotations

import ast
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".mypy_cache" / "shipped"


def package_folders(repo: Path = REPO) -> dict[str, Path]:
    """Installed package -> its folder, read from setup.py's ``MAPPED`` (the
    one place the mapping is written)."""
    for node in ast.parse((repo / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MAPPED" for t in node.targets):
            return {package: repo / folder for package, folder in ast.literal_eval(node.value).items()}
    raise SystemExit(f"typecheck: no MAPPED = {{...}} in {repo / 'setup.py'}")


def built_folders(root: Path, repo: Path = REPO) -> dict[Path, Path]:
    """Each package folder of the layout under ``root`` -> the repository
    folder it shows, the deepest first (``avhb/tasks`` before ``avhb``)."""
    built = {root.joinpath(*package.split(".")): folder for package, folder in package_folders(repo).items()}
    return dict(sorted(built.items(), key=lambda item: -len(item[0].parts)))


def build_tree(root: Path, repo: Path = REPO, extra: dict[str, str] | None = None) -> None:
    """The installed layout of the shipped packages under ``root`` (emptied
    first): a real folder per package holding a link per entry of its
    repository folder.  ``extra`` (repository-relative path -> text) adds
    modules beside the shipped ones without touching the repository
    (``{"tasks/planted.py": ...}`` is ``avhb.tasks.planted``)."""
    if root.exists():
        shutil.rmtree(root)
    built = built_folders(root, repo)
    for folder, source in reversed(built.items()):
        folder.mkdir(parents=True)
        for entry in sorted(source.iterdir()):
            if entry.name != "__pycache__":
                (folder / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for rel, text in (extra or {}).items():
        path = (repo / rel).resolve()
        shipped = [(f, s) for f, s in built.items() if path.is_relative_to(s.resolve())]
        if not shipped:
            raise SystemExit(f"typecheck: {rel} is in no shipped folder")
        folder, source = shipped[0]
        target = folder / path.relative_to(source.resolve())
        if target.exists() or target.is_symlink():
            raise SystemExit(f"typecheck: {rel} exists in the repository; an extra module must be new")
        target.write_text(text, encoding="utf-8")


def check(*options: str, repo: Path = REPO, work: Path = WORK,
          extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """mypy over every shipped module under its installed name (plus
    ``extra``: ``build_tree``), its report in the repository's paths."""
    work.mkdir(parents=True, exist_ok=True)
    root = work / "layout"
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build_tree(root, repo, extra)
        done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(repo / "pyproject.toml"),
                               "--cache-dir", str(work / "cache"), "--no-color-output", *options, str(root / "avhb")],
                              cwd=repo, capture_output=True, text=True)
    built = built_folders(root, repo)

    def shown(text: str) -> str:
        for folder, source in built.items():  # mypy prints a path under its working folder relative to it
            for printed in (str(folder), os.path.relpath(folder, repo)):
                text = text.replace(f"{printed}{os.sep}", f"{os.path.relpath(source, repo)}{os.sep}")
        return text

    return subprocess.CompletedProcess(done.args, done.returncode, shown(done.stdout), shown(done.stderr))


def main(argv: list[str]) -> int:
    done = check(*argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
