"""The import graph: no circles in the core; avhb/ imports nothing from the
plugin packages (tasks/, plugins/, model_backends/, installed as
avhb.tasks|plugins|model_backends); those and the examples import only the
public API (what counts as public: the docstring of
``test_packs_plugins_and_examples_import_only_the_public_api``); nothing
shipped imports tests/.  Every import statement counts, also those inside
functions."""
from __future__ import annotations

import ast
import re
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
    ("json_text",),  # json.dumps's text, its encoder built once
    ("errors", "paths", "redact", "version", "hookspecs", "lazy_exports"),  # the base (redact writes lines with json_text)
    ("atomic",),  # the atomic file write (errors)
    ("registry", "requirements"),  # plugins (pluggy) and optional packages
    ("model",),  # messages, the backend protocol, failure classes, retries
    ("process",),  # the event loop, the collector's pace, SIGINT/SIGTERM
    ("media",),  # decoding, sampling, cache, budget, the media spec
    ("taskdef",),  # task YAML, schema, index, templates, sample -> request
    ("data",),  # sources, Hub snapshots, downloads
    ("call",),  # THE call: key -> journal -> media -> limit -> backend
    ("score",),  # metrics, aggregates, judges (asking through call/)
    ("options",),  # RunOptions: what a run was asked to do
    ("runfolder",),  # the run folder's files: run.json, results.json, samples, journal, lock
    ("resume",),  # what a re-run keeps: setting kinds, finished tasks, the decision
    ("run",),  # the engine: plan, the task at run time, phases, drivers, usage
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
    # ``from avhb import hookspecs`` is an edge to avhb.hookspecs, not to the package (_targets)
    edges = {name: _targets(name, path, modules) - {name} for name, path in modules.items()}
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


# ---------------------------------------------------------------- the public API

REPO = CORE.parent
# Code that is not the core: the built-in task packs, metrics and backends
# (installed as avhb.tasks, avhb.plugins, avhb.model_backends) and the
# example third-party plugins.
PLUGIN_FOLDERS = {"tasks": "avhb.tasks", "plugins": "avhb.plugins", "model_backends": "avhb.model_backends"}
EXAMPLES = REPO / "examples"
PUBLIC_MODULES = ("avhb", "avhb.media", "avhb.score.metric_helpers", "avhb.redact",
                  "avhb.plugins.metrics")  # the built-in metrics a pack may build on (its package-level names)
# The tasks package's own modules beside the packs (tasks/sample_media.py, which every pack's
# make_sample.py draws with), which its packs share.
TASKS_SHARED = frozenset(f"avhb.tasks.{f.stem}" for f in (REPO / "tasks").glob("*.py") if f.stem != "__init__")
# The built-in backends' toolkit, for model_backends/ alone: LiteLLM's price
# map, the preset catalogue, json.dumps with its encoder built once (json_text:
# request bodies) (and resilience, whose failure vocabulary is public now: the
# caller owns retries).  Not public yet; a name the public
# API has must still come from the public API.
BACKEND_TOOLKIT = ("avhb.model.resilience", "avhb.model.prices", "avhb.model.presets", "avhb.json_text")
# The lazy public names of a built-in plugin package's own __init__ (avhb.plugins.metrics exports its
# metrics as avhb and avhb.media export theirs).
PACKAGE_TOOLKIT = ("avhb.lazy_exports",)
PLUGIN_PACKAGES = ("avhb.plugins.metrics",)


def _statements(path: Path, package: str):
    """(line, module, names) for every import statement of ``path``, a
    module of ``package``; ``names`` is None for ``import x.y``."""
    nodes = (n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for node in sorted(nodes, key=lambda n: n.lineno):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, None
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, module, [a.name for a in node.names]


def _plugin_modules():
    """(path, package) of every module outside the core that avhb ships or documents."""
    for folder, installed in PLUGIN_FOLDERS.items():
        for f in sorted((REPO / folder).rglob("*.py")):
            rel = f.relative_to(REPO / folder).with_suffix("").parts
            name = ".".join((installed,) + rel)
            yield f, name if f.name == "__init__.py" else name.rpartition(".")[0]
    for f in sorted(EXAMPLES.rglob("*.py")):
        parts = f.relative_to(EXAMPLES).with_suffix("").parts[1:]  # below the distribution's folder
        yield f, ".".join(parts[:-1]) if f.name != "__init__.py" else ".".join(parts[:-1])


def _public_names(module: str) -> set[str]:
    """``__all__``, else what the module defines without a leading ``_``."""
    import importlib
    import types

    mod = importlib.import_module(module)
    if hasattr(mod, "__all__"):
        return set(mod.__all__)
    return {n for n, v in vars(mod).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
            and getattr(v, "__module__", module) == module}


def _own(package: str) -> str:
    """The unit a module belongs to: its pack (``avhb.tasks.curve``), else
    its plugin package (``avhb.plugins``); free to import itself."""
    parts = package.split(".")
    return ".".join(parts[:3] if parts[:2] == ["avhb", "tasks"] and len(parts) > 2 else parts[:2])


def _private_imports(path: Path, package: str) -> list[str]:
    top = _public_names("avhb")
    own = _own(package)
    bad = []
    for line, module, names in _statements(path, package):
        if module != "avhb" and not module.startswith("avhb.") or module == own or module.startswith(own + "."):
            continue
        where = f"{path.relative_to(REPO)}:{line} imports {module}"
        if names and all(f"{module}.{n}" in PUBLIC_MODULES for n in names):  # from avhb.plugins import metrics
            continue
        if module not in PUBLIC_MODULES and (module in PLUGIN_FOLDERS.values()
                                             or module.startswith(tuple(p + "." for p in PLUGIN_FOLDERS.values()))):
            hidden = [p for p in module.split(".")[2:] + (names or []) if p.startswith("_")]
            if hidden:  # a plugin's private module or name
                bad.append(f"{where} ({', '.join(hidden)})")
            elif not (own.startswith("avhb.tasks.") and module in TASKS_SHARED):  # a pack and its package's own
                bad.append(f"{where} (inside a built-in plugin package; a pack builds on avhb.plugins.metrics)")
            continue
        if module in PUBLIC_MODULES:
            if names is None:
                continue
            outside = sorted(set(names) - _public_names(module))
            if outside:
                bad.append(f"{where} ({', '.join(outside)}: not in its public names)")
            continue
        if path.name == "__init__.py" and module in PACKAGE_TOOLKIT and package.removesuffix(".__init__") in PLUGIN_PACKAGES:
            continue
        if package.startswith("avhb.model_backends") and module in BACKEND_TOOLKIT:
            public = sorted(set(names or []) & top)
            if public:
                bad.append(f"{where} ({', '.join(public)}: import it from avhb)")
            continue
        bad.append(where + (f" ({', '.join(names)})" if names else ""))
    return bad


def test_packs_plugins_and_examples_import_only_the_public_api():
    """What a pack or a plugin may import from avhb, the rule avhb's own
    task packs, metrics and backends and the examples follow:

    * public: the names ``avhb`` exports (``avhb.__all__``), the
      package-level names of ``avhb.media`` and of ``avhb.plugins.metrics``
      (the built-in metrics a pack builds on; each one's ``__all__``, not
      the modules inside it) and the modules ``avhb.score.metric_helpers``
      and ``avhb.redact`` (``PUBLIC_MODULES``);
    * a module's own pack (``avhb.tasks.curve``) or plugin package
      (``avhb.plugins``, ``avhb.model_backends``, an example's), and for a
      built-in pack the tasks package's shared modules
      (``avhb.tasks.sample_media``: ``TASKS_SHARED``); any other module of
      ``avhb.tasks``, ``avhb.plugins`` or ``avhb.model_backends`` (another
      pack's, a built-in metric's own module) is private, and so is a
      module or name that starts with ``_``;
    * model_backends/ only: the backend toolkit (``BACKEND_TOOLKIT``), for
      the names the public API does not have;
    * every other ``avhb.<module>`` is private: its layout may change
      without notice.

    Imports inside functions count."""
    bad = [line for path, package in _plugin_modules() for line in _private_imports(path, package)]
    assert bad == [], "private avhb paths imported:\n" + "\n".join(bad)


def test_the_rule_catches_a_private_import(tmp_path):
    """The check above fails on what it names (so it cannot pass vacuously)."""
    pack = tmp_path / "hooks.py"
    pack.write_text("from avhb import Metric\nfrom avhb.score.metric import Metric\n"
                    "def f():\n    from avhb.runfolder.folder import write_json_atomic\n"
                    "from avhb import registry\nfrom avhb.plugins.metrics._common import count\n"
                    "from ...score import judges\nfrom ._data import _helper\n"
                    "from avhb.tasks.other.data import _helper\n"
                    "from avhb.plugins.metrics import ChoiceAccuracy, LikertFacet\nfrom avhb.tasks.sample_media import canvas\n"
                    "from avhb.plugins.metrics.choice import ChoiceAccuracy\nfrom avhb.plugins.metrics import Citation\n"
                    "import avhb.plugins.metrics.likert\nfrom avhb.tasks.other.data import helper\n"
                    "from avhb.model_backends.local import LocalBackend\nfrom avhb.plugins import metrics\n")
    global REPO
    saved, REPO = REPO, tmp_path
    try:
        bad = _private_imports(pack, "avhb.tasks.mypack")
    finally:
        REPO = saved
    assert bad == ["hooks.py:2 imports avhb.score.metric (Metric)",
                   "hooks.py:4 imports avhb.runfolder.folder (write_json_atomic)",
                   "hooks.py:5 imports avhb (registry: not in its public names)",
                   "hooks.py:6 imports avhb.plugins.metrics._common (_common)",
                   "hooks.py:7 imports avhb.score (judges)",
                   "hooks.py:9 imports avhb.tasks.other.data (_helper)",
                   "hooks.py:12 imports avhb.plugins.metrics.choice (inside a built-in plugin package; a pack builds on "
                   "avhb.plugins.metrics)",
                   "hooks.py:13 imports avhb.plugins.metrics (Citation: not in its public names)",
                   "hooks.py:14 imports avhb.plugins.metrics.likert (inside a built-in plugin package; a pack builds on "
                   "avhb.plugins.metrics)",
                   "hooks.py:15 imports avhb.tasks.other.data (inside a built-in plugin package; a pack builds on "
                   "avhb.plugins.metrics)",
                   "hooks.py:16 imports avhb.model_backends.local (inside a built-in plugin package; a pack builds on "
                   "avhb.plugins.metrics)"]


def test_every_public_name_resolves():
    """Each name the public modules promise loads (a renamed core function
    fails here, not in a third party's import), and stays what it is once
    a submodule of the same name was imported (``avhb.redact`` the module
    and ``redact`` the function): the import system puts a submodule on its
    package under its name, over a lazily exported one."""
    import importlib
    import types

    for module in PUBLIC_MODULES:
        mod = importlib.import_module(module)
        for name in sorted(_public_names(module)):
            if hasattr(mod, "__path__") and any((Path(p) / name).with_suffix(".py").exists() for p in mod.__path__):
                importlib.import_module(f"{module}.{name}")
            value = getattr(mod, name)
            assert value is not None and not isinstance(value, types.ModuleType), f"{module}.{name}"


def test_nothing_shipped_imports_the_tests():
    """Test doubles live in tests/ (tests/scripted_judges.py); no module of
    the wheel imports them."""
    shipped = [(f, n.rpartition(".")[0]) for n, f in _modules().items()] + list(_plugin_modules())
    bad = [f"{path.relative_to(REPO)}:{line} imports {module}" for path, package in shipped
           for line, module, _ in _statements(path, package) if module == "tests" or module.startswith("tests.")]
    assert bad == []


def test_plugins_md_lists_every_public_name():
    """docs/plugins.md, "The public API", names each name ``avhb`` exports
    and each public module."""
    import avhb

    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("## The public API", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([A-Za-z_][\w.]*)`", section))
    missing = sorted(n for n in avhb.__all__ if n != "__version__" and n not in named)
    assert missing == [] and all(f"from {m} import" in section for m in PUBLIC_MODULES if m != "avhb")
