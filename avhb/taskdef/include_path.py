"""``--include_path DIR``: task YAML and hook modules from a plain folder,
without packaging (lm-eval's flag of the same name).

The folder becomes a task pack like any plugin's: namespaced by its name
(``DIR=/work/mytasks`` -> tasks ``mytasks/<task>``, tags ``mytasks/<tag>``,
``--data mytasks=PATH``), indexed and validated by the same code (schema,
templates, hooks read by AST, metric and filter names), and its hooks
import as modules of a package made for it, ``avhb_include.<name>``
(``hooks.load`` -> ``avhb_include.mytasks.hooks:load``): the folder needs no
``__init__.py`` and is never put on ``sys.path`` as a whole.
"""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from avhb.errors import UserError

ROOT_PACKAGE = "avhb_include"
_ROOTS: dict[str, Path] = {}  # namespace -> folder


def namespace_of(folder: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", folder.name) or "include"


def add_include_path(folder: str | Path) -> str:
    """Register a folder of task files; returns its namespace.  A folder
    that does not exist, holds no YAML, or whose name another include path
    already uses is a ``UserError``."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise UserError(f"--include_path {folder}: no such folder")
    if not any(path.rglob("*.yaml")) and not any(path.rglob("*.yml")):
        raise UserError(f"--include_path {folder}: no task YAML in the folder")
    namespace = namespace_of(path)
    for other, other_path in _ROOTS.items():  # one name, or two names that share a hook package (my-tasks, my_tasks)
        if other_path != path and package_of(other) == package_of(namespace):
            raise UserError(f"--include_path {folder}: another include path is already named {other!r} "
                            f"({other_path}); rename one of the folders")
    _ROOTS[namespace] = path
    _make_package(namespace, path)
    return namespace


def package_of(namespace: str) -> str:
    return f"{ROOT_PACKAGE}.{re.sub(r'[^A-Za-z0-9_]', '_', namespace)}"


def _make_package(namespace: str, path: Path) -> None:
    """``avhb_include.<name>``: a package whose modules are the folder's files."""
    if ROOT_PACKAGE not in sys.modules:
        root = types.ModuleType(ROOT_PACKAGE, "task folders given with --include_path")
        root.__path__ = []
        sys.modules[ROOT_PACKAGE] = root
    name = package_of(namespace)
    module = types.ModuleType(name, f"hooks of the task folder {path}")
    module.__path__ = [str(path)]
    module.__file__ = str(path / "__init__.py")
    sys.modules[name] = module


def include_roots() -> list[tuple[str, str, Path]]:
    """(namespace, package, folder) of every registered include path."""
    return [(ns, package_of(ns), path) for ns, path in _ROOTS.items()]


def clear() -> None:
    """Forget every include path (tests)."""
    for ns in list(_ROOTS):
        package = package_of(ns)
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            sys.modules.pop(name, None)  # its hook modules too: another folder of the same name has others
    _ROOTS.clear()
