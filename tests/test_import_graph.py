"""The core's import graph: no circles, and avhb/ imports nothing from the
plugin packages (tasks/, plugins/, model_backends/, installed as
avhb.tasks|plugins|model_backends).  Every import statement counts, also
those inside functions."""
from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "avhb"
PLUGIN_PACKAGES = ("avhb.tasks", "avhb.plugins", "avhb.model_backends")


def _modules() -> dict[str, Path]:
    out = {}
    for f in CORE.rglob("*.py"):
        parts = list(f.relative_to(CORE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _import_statements(name: str, path: Path):
    """(module, names) of every import statement of module ``name``
    (relative ones resolved); ``names`` is None for ``import x.y``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names]


def _imports(name: str, path: Path) -> set[str]:
    found: set[str] = set()
    for module, names in _import_statements(name, path):
        found.add(module)
        found.update(f"{module}.{n}" for n in names or ())
    return found



# ---------------------------------------------------------------- layers
# The core's parts, bottom to top (docs/design.md, "Layers"): a part imports
# only parts in rows below its own.  A part is a subpackage (``model``), a
# top-level module (``errors``) or "" (the ``avhb`` package itself: the
# public API, whose names load lazily from every layer).
LAYERS = (
    ("errors", "paths", "redact", "version", "hookspecs"),  # import no other part
    ("registry", "requirements"),  # plugins (pluggy) and optional packages
    ("model",),  # messages, the backend protocol, failure classes, retries
    ("media",),  # decoding, sampling, cache, budget, the media spec
    ("taskdef",),  # task YAML, schema, index, templates, sample -> request
    ("data",),  # sources, Hub snapshots, downloads
    ("call",),  # THE call: key -> journal -> media -> limit -> backend
    ("score",),  # metrics, aggregates, judges (asking through call/)
    ("run",),  # options, the task at run time, phases, drivers, the run folder
    ("cluster",),  # shards, merge, executors
    ("report",),  # reads finished run folders
    ("api",),  # avhb.evaluate: a run and its report
    ("cli", ""),  # the command; the public API
)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _targets(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The core modules ``name`` imports (``from avhb import hookspecs`` is
    the module avhb.hookspecs, not the package)."""
    found: set[str] = set()
    for module, names in _import_statements(name, path):
        subs = {f"{module}.{n}" for n in names or ()} & set(modules)
        found.update(subs if names and len(subs) == len(names) else subs | {module})
    return {m for m in found if m in modules}


def _back_edges() -> list[str]:
    rank = {part: i for i, row in enumerate(LAYERS) for part in row}
    modules = _modules()
    out = []
    for name, path in sorted(modules.items()):
        here = _part(name)
        for target in sorted(_targets(name, path, modules)):
            there = _part(target)
            if there != here and not rank[there] < rank[here]:
                out.append(f"{here or 'avhb'} -> {there or 'avhb'}: {name} imports {target}")
    return out


def test_every_part_of_the_core_has_a_layer():
    placed = {part for row in LAYERS for part in row}
    assert sorted({_part(m) for m in _modules()} - placed) == []


def test_layers_point_one_way():
    """Every import of the core, inside functions and under TYPE_CHECKING
    too, points down the layers: 0 back edges."""
    assert _back_edges() == []

def test_core_imports_no_plugin_package():
    bad = [f"{name} -> {target}" for name, path in _modules().items() for target in _imports(name, path)
           if any(target == p or target.startswith(p + ".") for p in PLUGIN_PACKAGES)]
    assert bad == []


def test_no_import_circles_in_the_core():
    modules = _modules()
    edges = {name: {t for t in _imports(name, path) if t in modules and t != name} for name, path in modules.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m, [])
    assert cycles == []
