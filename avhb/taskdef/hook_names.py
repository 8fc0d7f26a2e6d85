"""What a hook module defines, read from its source (AST), never imported.

A task file names a hook as ``!function module.name``; the peers import the
module and take the attribute, so a name counts whenever it exists once the
module has run: a ``def`` or ``class`` (decorated or not), an assignment
(``fn = partial(...)``, tuple unpacking, ``fn: Callable = ...``), an import
(``from .common import fn``, ``import x as fn``), a definition inside a
module-level ``if``/``try``/``with``/``for`` (either branch), or a star
import of a module this reader can find (its ``__all__`` when that is a
literal list, else its public names).

Some modules make names no static read can see: ``globals().update(...)``,
``globals()[k] = ...``, ``setattr(sys.modules[__name__], ...)``, ``exec``,
a module-level ``__getattr__``, or a star import of a module not found.
:class:`ModuleNames` says so (``dynamic``): a name it does not list is then
*undecided*, not missing, and is checked when the run imports the module.

``imports``: the top-level packages the module imports at module level
(``import numpy``, ``from sklearn.metrics import f1_score``), for the
pre-run check of what is installed; relative imports and the module's
siblings are not listed.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Callable

_DYNAMIC_CALLS = {"exec": "exec()", "setattr": "setattr()"}


@dataclass(frozen=True)
class ModuleNames:
    names: frozenset[str]
    dynamic: str | None = None  # how the module may define names no static read sees (e.g. "globals().update at line 17")
    imports: tuple[tuple[str, int], ...] = ()  # (top-level package, line) of each unguarded absolute module-level import
    error: str | None = None  # the module cannot be read (its syntax error)
    exported: frozenset[str] | None = None  # a literal ``__all__``

    def public(self) -> frozenset[str]:
        """What ``from module import *`` takes: ``__all__`` when literal, else the names without ``_``."""
        if self.exported is not None:
            return self.exported
        return frozenset(n for n in self.names if not n.startswith("_"))


# find(module, level) -> the source file of a module a star import names, or None
Finder = Callable[[str, int], "str | None"]


def module_names(source: str, find: Finder | None = None, _seen: frozenset[str] = frozenset()) -> ModuleNames:
    """The names ``source`` (a .py file) defines at module level (module
    docstring); ``find`` locates the module of a star import."""
    try:
        with open(source, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=source)
    except SyntaxError as exc:
        return ModuleNames(frozenset(), error=f"hook module {source} has a syntax error at line {exc.lineno}")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return ModuleNames(frozenset(), error=f"hook module {source} cannot be read: {exc}")
    names: set[str] = set()
    imports: list[tuple[str, int]] = []
    dynamic: list[str] = []
    exported: frozenset[str] | None = None
    for node, guarded in _module_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if node.name == "__getattr__" and not isinstance(node, ast.ClassDef):
                dynamic.append(f"a module __getattr__ at line {node.lineno}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(_bound(target))
                if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(node, ast.Assign):
                    exported = _literal_names(node.value)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
                if not guarded:
                    imports.append((alias.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and not guarded:
                imports.append((node.module.split(".")[0], node.lineno))
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name)
                    continue
                found = find(node.module or "", node.level) if find is not None else None
                spelled = f"from {'.' * node.level}{node.module or ''} import * at line {node.lineno}"
                if found is None or os.path.abspath(found) == os.path.abspath(source):
                    # not found, or the module's own file (a sys.path change decides what it imports)
                    dynamic.append(spelled)
                    continue
                if os.path.abspath(found) in _seen:
                    continue
                star = module_names(found, _sibling_finder(os.path.dirname(found), find),
                                    _seen | {os.path.abspath(source)})
                names.update(star.public())
                if star.dynamic:
                    dynamic.append(star.dynamic)
    dynamic += _dynamic_anywhere(tree)
    return ModuleNames(frozenset(names), "; ".join(dict.fromkeys(dynamic)) or None, tuple(imports),
                       exported=exported)


def _literal_names(value: ast.expr) -> frozenset[str] | None:
    try:
        names = ast.literal_eval(value)
    except ValueError:
        return None
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        return frozenset(names)
    return None


def _module_level(body: list[ast.stmt], guarded: bool = False):
    """(statement, guarded) for every statement that may run when the
    module is imported: the body, and the bodies of module-level
    if/try/with/for/while/match (any branch).  ``guarded``: inside a ``try``
    with handlers or an ``if`` (an import there may be optional)."""
    for node in body:
        yield node, guarded
        if isinstance(node, ast.If):
            yield from _module_level(node.body, True)
            yield from _module_level(node.orelse, True)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield from _module_level(node.body, guarded)
            yield from _module_level(node.orelse, guarded)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _module_level(node.body, guarded)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            yield from _module_level(node.body, guarded or bool(node.handlers))
            for handler in node.handlers:
                yield from _module_level(handler.body, True)
            yield from _module_level(node.orelse, guarded)
            yield from _module_level(node.finalbody, guarded)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from _module_level(case.body, True)


def _bound(target: ast.expr) -> set[str]:
    """The names an assignment target binds (``a``, ``a, b``, ``[a, *b]``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return set()


def _is_globals_item(target: ast.expr) -> bool:
    return isinstance(target, ast.Subscript) and _is_call_to(target.value, ("globals", "vars", "locals"))


def _is_call_to(node: ast.expr, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _dynamic_anywhere(tree: ast.Module) -> list[str]:
    """What can define module names at import, anywhere in the module (a
    function that writes ``globals()`` may be called at import):
    ``globals()[k] = ...``, ``globals().update``, ``exec``, ``setattr``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_globals_item(t) for t in targets):
                out.append(f"globals()[...] = at line {node.lineno}")
    return out + _dynamic_calls(tree)


def _dynamic_calls(node: ast.AST) -> list[str]:
    """Calls that can define module names: ``globals().update``,
    ``exec``, ``setattr(...)``."""
    out = []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault", "__setitem__") \
                and _is_call_to(func.value, ("globals", "vars", "locals")):
            out.append(f"globals().{func.attr} at line {call.lineno}")
        elif isinstance(func, ast.Name) and func.id in _DYNAMIC_CALLS:
            out.append(f"{_DYNAMIC_CALLS[func.id]} at line {call.lineno}")
    return out


def _sibling_finder(folder: str, outer: Finder | None) -> Finder:
    """A finder for the star imports of a module in ``folder``: relative
    imports and bare sibling names resolve there, others through ``outer``."""

    def find(module: str, level: int) -> str | None:
        base = folder
        for _ in range(max(level - 1, 0)):
            base = os.path.dirname(base)
        if level or module:
            hit = module_file(base, module.split(".") if module else [])
            if hit is not None or level:
                return hit
        return outer(module, level) if outer is not None else None

    return find


def module_file(folder: str, parts: list[str]) -> str | None:
    """``folder/a/b.py`` or ``folder/a/b/__init__.py`` for parts ``[a, b]``
    (``folder/__init__.py`` for no parts), or None."""
    stem = os.path.join(folder, *parts)
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if parts and os.path.isfile(candidate):
            return candidate
    if not parts and os.path.isfile(os.path.join(folder, "__init__.py")):
        return os.path.join(folder, "__init__.py")
    return None


# The harnesses whose own task modules a task file may name by absolute path
# (``!function lmms_eval.tasks.librispeech.utils.doc_to_audio``): the peers
# whose task folders avhb reads.  Any other hook lives inside the task pack.
PEER_PACKAGES = ("lm_eval", "lmms_eval")


@dataclass(frozen=True)
class HookModule:
    path: str  # the module's source file
    absolute: bool  # named by its absolute import path (lm-eval's second rule), not next to the YAML


def split_hook(dotted: str) -> tuple[str, str, str]:
    """``(folder, module, function)`` of a hook: ``utils.fn`` -> ``("",
    "utils", "fn")``; a hook inherited from a base in another folder carries
    that folder, relative to the task's YAML: ``../utils.fn`` -> ``("..",
    "utils", "fn")``."""
    folder, _, rest = dotted.rpartition("/")
    module, _, attr = rest.rpartition(".")
    return folder, module, attr


def find_hook_module(module: str, folder: str) -> HookModule | None:
    """Where the module of ``!function module.fn`` written in a YAML file in
    ``folder`` is, as lm-eval and lmms-eval look: a file next to the YAML
    (``utils`` -> ``folder/utils.py``, ``a.b`` -> ``folder/a/b.py``), else
    a module of one of the peers' packages (:data:`PEER_PACKAGES`) by its
    absolute path: inside an enclosing folder of that name (the peer's
    task tree, wherever it was copied), else the installed package.  Found
    on disk only; nothing is imported."""
    parts = module.split(".")
    local = module_file(folder, parts)
    if local is not None:
        return HookModule(local, False)
    if len(parts) < 2 or parts[0] not in PEER_PACKAGES:
        return None
    here = os.path.abspath(folder)
    while True:
        if os.path.basename(here) == parts[0]:
            hit = module_file(here, parts[1:])
            if hit is not None:
                return HookModule(hit, True)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for location in installed_locations(parts[0]):
        hit = module_file(location, parts[1:])
        if hit is not None:
            return HookModule(hit, True)
    return None


def installed_locations(package: str) -> list[str]:
    """The folders of an installed top-level package, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)  # a top-level name: finders only, the module does not run
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec is not None else []


def is_installed(package: str) -> bool:
    """Whether a top-level module can be imported here (found, not imported)."""
    import importlib.util
    import sys

    if package in sys.modules or package in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False
