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


def _imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


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
