"""The checks of one resolved task that run none of its code: hooks (the
module's source read by AST, never imported), templates (parsed, never
rendered), judge prompt files, metric and filter names.  ``Sources`` reads
each hook module and prompt file once per index build."""
from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb.taskdef.filestats import Sources

HOOK_KEYS = ("data_loader", "process_docs", "doc_to_messages", "driver", "doc_to_text", "doc_to_target", "doc_to_choice",
             "process_results", "doc_to_visual")


def check_hook(package: str, dotted: str, pack_dir: Path, *, sources: Sources | None = None) -> str | None:
    """Return an error message if the hook's module or function is missing.
    Reads the module's source (once per build with ``sources``); imports nothing."""
    sources = Sources() if sources is None else sources
    return sources.once(("hook", str(pack_dir), dotted), lambda: _check_hook(dotted, pack_dir, sources))


def _check_hook(dotted: str, pack_dir: Path, sources: Sources) -> str | None:
    module, _, attr = dotted.rpartition(".")
    folder = str(pack_dir)
    source = os.path.join(folder, *module.split(".")) + ".py"
    if sources.note(source) is None:
        pkg_init = os.path.join(folder, *module.split("."), "__init__.py")
        if sources.note(pkg_init) is None:
            return f"hook module {module!r} not found in {pack_dir}"
        source = pkg_init
    names = sources.once(("names", source), lambda: _module_names(source))
    if isinstance(names, str):
        return names
    if attr not in names:
        return f"hook function {attr!r} not defined in {os.path.basename(source)}"
    return None


def _module_names(source: str) -> set[str] | str:
    """Top-level names a hook module defines or imports, or the message of its syntax error."""
    try:
        tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    except SyntaxError as exc:
        return f"hook module {source} has a syntax error at line {exc.lineno}"
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def iter_hooks(config: dict[str, Any]):
    """(key path, dotted name) of every hook a resolved config names."""
    for key in HOOK_KEYS:
        value = config.get(key)
        if isinstance(value, dict) and "function" in value:
            yield (key,), value["function"]
    for listkey in ("metric_list", "filter_list"):
        for i, entry in enumerate(config.get(listkey) or []):
            if isinstance(entry, dict) and "function" in entry:
                yield (listkey, i, "function"), entry["function"]
            aggregation = entry.get("aggregation") if isinstance(entry, dict) else None
            if isinstance(aggregation, dict) and "function" in aggregation:
                yield (listkey, i, "aggregation"), aggregation["function"]
            steps = entry.get("filter") if isinstance(entry, dict) else None
            for j, step in enumerate(steps if isinstance(steps, list) else []):  # an lm-eval pipeline's steps
                for key, value in (step.items() if isinstance(step, dict) else ()):
                    if isinstance(value, dict) and isinstance(value.get("function"), str):
                        yield (listkey, i, "filter", j, key), value["function"]
    prep = config.get("prepare") or {}
    if "function" in prep:
        yield ("prepare", "function"), prep["function"]
    fewshot = config.get("fewshot_config") or {}
    for key in ("samples", "process_docs", "doc_to_text", "doc_to_target", "doc_to_choice"):
        value = fewshot.get(key) if isinstance(fewshot, dict) else None
        if isinstance(value, dict) and isinstance(value.get("function"), str):
            yield ("fewshot_config", key), value["function"]


@dataclass(frozen=True)
class KnownNames:
    """Registered metric and filter names, for ``metric:`` / ``filter:``
    entries (``None`` in a field: not checked)."""

    metrics: frozenset[str] | None = None
    filters: frozenset[str] | None = None


def iter_templates(config: dict[str, Any]):
    """(key path, template text) of every template a resolved config holds."""
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice", "system_prompt"):
        if isinstance(config.get(key), str):
            yield (key,), config[key]
    for key, value in (config.get("media") or {}).items():
        if key in ("video", "audio", "images", "asr_language") and isinstance(value, str):
            yield ("media", key), value
    for role, spec in (config.get("judges") or {}).items():
        if isinstance(spec, dict) and isinstance(spec.get("prompt"), str):
            yield ("judges", role, "prompt"), spec["prompt"]


def member_problems(member: dict[str, Any], package: str, folder: Path,
                    known: KnownNames | None = None, *, sources: Sources | None = None,
                    schema_refused: bool = False) -> list[tuple[tuple, str]]:
    """(key path, message) of every problem of one resolved task: hooks
    (read, never imported), templates (parsed, never rendered), judge
    prompt files, metric and filter names.  Every file read is noted in
    ``sources`` (the index keys the task file's entry on them).
    ``schema_refused``: the file already has schema errors (a shape these
    checks trip over is then not reported twice)."""
    from avhb.taskdef.templates import check_template

    sources = Sources() if sources is None else sources
    out: list[tuple[tuple, str]] = []
    try:
        _member_problems(member, package, folder, known, out, check_template, sources)
    except (TypeError, AttributeError, ValueError) as exc:  # a shape these checks do not expect
        if not schema_refused:  # else the schema error already says why; otherwise say it, never skip silently
            out.append(((), f"the task could not be checked ({type(exc).__name__}: {exc})"))
    return out


def _member_problems(member, package, folder, known, out, check_template, sources: Sources) -> None:
    for keypath, dotted in iter_hooks(member):
        problem = check_hook(package, dotted, folder, sources=sources)
        if problem:
            out.append((keypath, problem))
    filters = member.get("filter_list") or []
    pipelines = [isinstance(e, dict) and isinstance(e.get("filter"), list) for e in filters]
    if any(pipelines) and not all(pipelines):
        out.append((("filter_list",), "mixes lm-eval pipelines ({name, filter: [...]}) with avhb filter steps "
                                      "({filter: NAME}); use one form"))
    for keypath, source in iter_templates(member):
        problem = check_template(source)
        if problem:
            out.append((keypath, problem))
    for role, spec in (member.get("judges") or {}).items():
        name = spec.get("prompt_file") if isinstance(spec, dict) else None
        if isinstance(name, str):
            path = folder / name
            if sources.note(str(path)) is None:
                out.append((("judges", role, "prompt_file"), f"prompt file {name!r} not found next to the YAML"))
            else:
                problem = sources.once(("prompt", str(path)),
                                       lambda: check_template(path.read_text(encoding="utf-8")))
                if problem:
                    out.append((("judges", role, "prompt_file"), f"{name}: {problem}"))
    if known is not None:
        for listkey, field_name, names in (("metric_list", "metric", known.metrics),
                                           ("filter_list", "filter", known.filters)):
            if names is None or (field_name == "metric" and member.get("process_results") is not None):
                continue  # process_results: metric_list names the keys the hook returns
            named: list[tuple[tuple[Any, ...], Any]] = []
            for i, entry in enumerate(member.get(listkey) or []):
                value = entry.get(field_name) if isinstance(entry, dict) else None
                if isinstance(value, list):  # an lm-eval filter pipeline: its steps' names
                    named += [((listkey, i, "filter", j, "function"), step.get("function"))
                              for j, step in enumerate(value) if isinstance(step, dict)]
                else:
                    named.append(((listkey, i, field_name), value))
            for keypath, name in named:
                if not isinstance(name, str) or name in names:
                    continue
                close = difflib.get_close_matches(name, sorted(names), n=3)
                if field_name == "metric" and "evaluate" in names and _evaluate_name(name, folder, close, sources):
                    continue  # loaded through Hugging Face evaluate at run time (the metric fallback)
                hint = f"; did you mean {', '.join(close)}?" if close else f" (see `avhb list {field_name}s`)"
                out.append((keypath, f"unknown {field_name} {name!r}{hint}"))


def _evaluate_name(name: str, folder: Path, close: list[str], sources: Sources) -> bool:
    """An unregistered metric name that the ``evaluate`` fallback will load:
    ``evaluate/NAME``, a module file or folder next to the YAML, or a bare
    name that resembles no registered metric (a close one is a typo)."""
    if name.startswith("evaluate/"):
        return True
    if name.endswith(".py") or "/" in name:
        return (sources.note(str(folder / name)) is not None or sources.note(str(folder / (name + ".py"))) is not None
                or (folder / name).is_dir())
    return not close
