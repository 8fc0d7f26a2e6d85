"""``avhb validate``'s checks of a task's ``metric_list``: every option an
entry passes is one its metric declares (``Metric.accepts``), and every
judge role a metric needs is declared under the task's ``judges``.

The run makes the same checks when it builds the metrics (before any
model call); validate makes them without running a pack's code:

* a registered metric (``metric: NAME``) is imported (it is installed
  plugin code, not the file being checked) and built with the entry's
  options, which also yields the judge roles it needs;
* a pack's own metric class (``function: module.Class``) is read from the
  module's source: ``accepts`` must be a literal dict, and the class's
  bases are followed (in the module, in sibling modules of the pack, or
  imported from installed packages).  Its judge roles are computed from
  its options at run time only, so validate does not check them.

A name the ``evaluate`` fallback loads (``rouge``, ``evaluate/...``)
takes any option (passed to the module's ``compute``)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from avhb.errors import UserError

# keys of a metric_list entry that are not the metric's options
ENTRY_KEYS = ("metric", "function", "aggregation", "higher_is_better", "name", "kind", "description",
              "hf_evaluate")  # hf_evaluate: lm-eval's switch to the evaluate module of that name


def entry_options(entry: dict[str, Any]) -> dict[str, Any]:
    """The options a metric_list entry passes to its metric."""
    return {k: v for k, v in entry.items() if k not in ENTRY_KEYS}


def metric_problems(member: dict[str, Any], package: str, folder: Path, registry: Any) -> list[tuple[tuple, str]]:
    """(key path, message) of every metric entry whose options or judge
    roles do not fit (module docstring)."""
    from avhb.score.metric import option_problem

    out: list[tuple[tuple, str]] = []
    roles = set((member.get("judges") or {}) if isinstance(member.get("judges"), dict) else ())
    registered = registry.entries.get("metrics", {})
    reader = _SourceReader(package, folder)
    for i, entry in enumerate(member.get("metric_list") or []):
        if not isinstance(entry, dict):
            continue
        options = entry_options(entry)
        if isinstance(entry.get("metric"), str):
            name = entry["metric"]
            if name not in registered or name == "evaluate":
                continue  # loaded through the evaluate fallback: any option (or the name check reports it)
            cls = registry.load("metrics", name)
            accepted = cls.accepted_options()
            problem = option_problem(accepted, options) if accepted is not None else None
            if problem:
                out.append((("metric_list", i), f"metric {name!r}: {problem}"))
                continue
            try:
                metric = cls(name=entry.get("name") or name.rpartition("/")[2], **options)
            except Exception as exc:  # noqa: BLE001 - the constructor refused the options: say why
                out.append((("metric_list", i), f"metric {name!r}: {' '.join(str(exc).split())}"))
                continue
            missing = [r for r in metric.needs_judges if r not in roles]
            if missing:
                out.append((("metric_list", i), f"metric {metric.name!r} needs judge role(s) {', '.join(missing)}, "
                                                "which the task does not declare under 'judges'"))
        elif isinstance(entry.get("function"), str):
            module, _, attr = entry["function"].rpartition(".")
            found = reader.accepts(folder / (module.replace(".", "/") + ".py"), attr)
            problem = option_problem(found[1], options) if found is not None and found[0] else None
            if problem:
                out.append((("metric_list", i), f"metric {entry['function']!r}: {problem}"))
    return out


Accepts = tuple[bool, set[str]]  # (declared by some class of the chain, the option names)


class _SourceReader:
    """A pack metric class's accepted options, read from source (module
    docstring), as ``(declared, names)``; None when they cannot be known
    without running code.  Undeclared (no class below ``Metric`` sets
    ``accepts``): a plugin written before the declaration, not checked."""

    def __init__(self, package: str, folder: Path):
        self.package, self.folder = package, folder
        self._trees: dict[Path, ast.Module | None] = {}

    def _tree(self, path: Path) -> ast.Module | None:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                self._trees[path] = None  # the hook check reports a missing or broken module
        return self._trees[path]

    def accepts(self, path: Path, name: str, depth: int = 0) -> Accepts | None:
        tree = self._tree(path) if depth < 12 else None
        if tree is None:
            return None
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return self._class(path, node, depth)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
                    any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return self.accepts(path, node.value.id, depth + 1)  # an alias: `wAcc = WAcc`
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return self._imported(path, node, alias.name, depth)
        return None

    def _class(self, path: Path, node: ast.ClassDef, depth: int) -> Accepts | None:
        own: set[str] = set()
        declared = False
        for stmt in node.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
                stmt.target if isinstance(stmt, ast.AnnAssign) else None
            if (isinstance(target, ast.Name) and target.id == "accepts" and isinstance(stmt, (ast.Assign, ast.AnnAssign))
                    and stmt.value is not None):
                try:
                    value = ast.literal_eval(stmt.value)
                except ValueError:
                    return None  # not a literal: known only at run time
                if not isinstance(value, dict):
                    return None
                own, declared = {str(k) for k in value}, True
        for base in node.bases:
            if not isinstance(base, ast.Name):
                return None
            inherited = self.accepts(path, base.id, depth + 1)
            if inherited is None:
                return None
            declared = declared or inherited[0]
            own |= inherited[1]
        return declared, own

    def _imported(self, path: Path, node: ast.ImportFrom, attr: str, depth: int) -> Accepts | None:
        module = node.module or ""
        if node.level:  # a sibling module of the pack: read, never imported
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            return self.accepts(base.joinpath(*module.split(".")).with_suffix(".py"), attr, depth + 1) \
                if module else None
        if module == self.package or module.startswith(self.package + "."):
            rel = module[len(self.package):].lstrip(".")
            return self.accepts(self.folder.joinpath(*rel.split(".")).with_suffix(".py"), attr, depth + 1) \
                if rel else None
        try:
            import importlib.util

            spec = importlib.util.find_spec(module)  # finds the file; runs no module code
        except (ImportError, ValueError):
            return None
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is not None and origin.is_relative_to(self.folder.resolve()):
            return self.accepts(origin, attr, depth + 1)  # the pack's own module under an absolute name: read it
        try:  # installed code (avhb's built-in metrics, another plugin): importing it runs no pack code
            obj = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError, UserError):
            return None
        accepted = getattr(obj, "accepted_options", None)
        if not callable(accepted):
            return None
        names = accepted()
        return (False, set()) if names is None else (True, set(names))


def task_problems(cfg: Any, registry: Any) -> list[str]:
    """``file:line: key: message`` lines for one resolved task (a
    ``TaskConfig``), as ``avhb validate`` prints them."""
    from avhb.taskdef.yaml_file import YamlDoc

    doc = YamlDoc(cfg.file, cfg.config, cfg.lines)
    return [str(doc.error(keypath, f"task {cfg.name!r}: {message}"))
            for keypath, message in metric_problems(cfg.config, cfg.package, cfg.pack_dir, registry)]
