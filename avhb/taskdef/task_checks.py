"""The checks of one resolved task that run none of its code: hooks (the
module's source read by AST, never imported), templates (parsed, never
rendered), judge prompt files, metric and filter names, reasoning tags.  ``Sources`` reads
each hook module and prompt file once per index build."""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb.taskdef.filestats import Sources
from avhb.taskdef.reasoning import tag_pairs
from avhb.taskdef.hook_names import (PEER_PACKAGES, ModuleNames, _sibling_finder, find_hook_module, is_installed,
                                     module_file, module_names, split_hook)

HOOK_KEYS = ("data_loader", "process_docs", "doc_to_messages", "driver", "doc_to_text", "doc_to_target", "doc_to_choice",
             "process_results", "doc_to_visual", "doc_to_image", "doc_to_audio", "custom_dataset",
             "doc_to_decontamination_query")


@dataclass(frozen=True)
class HookCheck:
    """What reading a hook's module says: a problem (the task cannot run as
    written), or a note (it may run; a static read cannot tell, or it needs
    a package this machine lacks)."""

    problem: str | None = None
    note: str | None = None


def check_hook(package: str, dotted: str, pack_dir: Path, *, sources: Sources | None = None) -> HookCheck:
    """Whether the hook's module defines the function (read by AST, once per
    build with ``sources``; imports nothing): see :mod:`avhb.taskdef.hook_names`."""
    sources = Sources() if sources is None else sources
    return sources.once(("hook", str(pack_dir), dotted), lambda: _check_hook(dotted, pack_dir, sources))


def _check_hook(dotted: str, pack_dir: Path, sources: Sources) -> HookCheck:
    rel, module, attr = split_hook(dotted)
    folder = os.path.normpath(os.path.join(str(pack_dir), rel)) if rel else str(pack_dir)
    for candidate in (os.path.join(folder, *module.split(".")) + ".py",
                      os.path.join(folder, *module.split("."), "__init__.py")):
        sources.note(candidate)  # the entry depends on these files, present or not
    found = find_hook_module(module, folder)
    if found is None:
        hint = (f" (and {module.split('.')[0]} is not installed here)"
                if module.split(".")[0] in PEER_PACKAGES and not is_installed(module.split(".")[0]) else "")
        return HookCheck(f"hook module {module!r} not found in {folder}{hint}")
    sources.note(found.path)
    names = sources.once(("names", found.path), lambda: module_names(found.path, _star_finder(found.path)))
    if names.error:
        return HookCheck(names.error)
    base = os.path.basename(found.path)
    if attr not in names.names:
        if names.dynamic:
            return HookCheck(note=f"cannot tell from {base}'s source whether it defines {attr!r} (it sets names "
                                  f"when imported: {names.dynamic}); the run imports it and checks")
        return HookCheck(f"hook function {attr!r} not defined in {base}")
    missing = missing_imports(names, os.path.dirname(found.path))
    if missing:
        return HookCheck(note=f"{base} imports {describe_missing(missing)}, not installed here: the task runs once "
                              f"it is ({install_line(missing)})")
    return HookCheck()


def _star_finder(source: str):
    """Star imports of a hook module: its siblings, then the peers' modules by absolute path."""
    folder = os.path.dirname(source)

    def outer(module: str, level: int) -> str | None:
        hit = find_hook_module(module, folder) if module and not level else None
        return hit.path if hit is not None else None

    return _sibling_finder(folder, outer)


def missing_imports(names: ModuleNames, folder: str) -> list[tuple[str, int]]:
    """The module-level imports of a hook module that are not installed here
    (a sibling module or package of the folder is not a missing package)."""
    out: list[tuple[str, int]] = []
    for package, line in names.imports:
        if module_file(folder, [package]) is not None or os.path.isdir(os.path.join(folder, package)):
            continue
        if any(out_name == package for out_name, _ in out) or is_installed(package):
            continue
        out.append((package, line))
    return out


def describe_missing(missing: list[tuple[str, int]]) -> str:
    """``requests (line 3), cv2 (line 5)``."""
    return ", ".join(f"{package} (line {line})" for package, line in missing)


def install_line(missing: list[tuple[str, int]]) -> str:
    """``pip install requests opencv-python-headless``."""
    return "pip install " + " ".join(dict.fromkeys(pip_name(package) for package, _ in missing))


# import name -> the distribution to install, where they differ
_PIP_NAMES = {"cv2": "opencv-python-headless", "PIL": "pillow", "sklearn": "scikit-learn", "yaml": "pyyaml",
              "skimage": "scikit-image", "bs4": "beautifulsoup4", "lm_eval": "lm-eval", "lmms_eval": "lmms-eval",
              "Levenshtein": "levenshtein", "dateutil": "python-dateutil", "google": "protobuf",
              "sentence_transformers": "sentence-transformers", "attr": "attrs", "Crypto": "pycryptodome",
              "docx": "python-docx", "fitz": "pymupdf", "jieba": "jieba", "dotenv": "python-dotenv",
              "pycocotools": "pycocotools", "decord": "decord", "av": "av", "pytz": "pytz"}


def pip_name(module: str) -> str:
    """The PyPI name a missing import is installed as (most are the module's own name)."""
    return _PIP_NAMES.get(module, module.replace("_", "-"))


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
            metric = entry.get("metric") if isinstance(entry, dict) else None
            if isinstance(metric, dict) and isinstance(metric.get("function"), str):  # lm-eval's callable metric
                yield (listkey, i, "metric"), metric["function"]
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
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice", "system_prompt", "gen_prefix", "description"):
        if isinstance(config.get(key), str):
            yield (key,), config[key]
    fewshot = config.get("fewshot_config")
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix"):
        if isinstance(fewshot, dict) and isinstance(fewshot.get(key), str):
            yield ("fewshot_config", key), fewshot[key]
    for key, value in (config.get("media") or {}).items():
        if key in ("video", "audio", "images", "asr_language") and isinstance(value, str):
            yield ("media", key), value
    for role, spec in (config.get("judges") or {}).items():
        if isinstance(spec, dict) and isinstance(spec.get("prompt"), str):
            yield ("judges", role, "prompt"), spec["prompt"]


def member_problems(member: dict[str, Any], package: str, folder: Path,
                    known: KnownNames | None = None, *, sources: Sources | None = None,
                    schema_refused: bool = False, notes: list[tuple[tuple, str]] | None = None
                    ) -> list[tuple[tuple, str]]:
    """(key path, message) of every problem of one resolved task: hooks
    (read, never imported), templates (parsed, never rendered), judge
    prompt files, metric and filter names; what deserves a word but does
    not stop the task is appended to ``notes`` (key path, message).  Every
    file read is noted in ``sources`` (the index keys the task file's entry
    on them).  ``schema_refused``: the file already has schema errors (a
    shape these checks trip over is then not reported twice)."""
    from avhb.taskdef.templates import check_template

    sources = Sources() if sources is None else sources
    out: list[tuple[tuple, str]] = []
    notes = [] if notes is None else notes
    try:
        _member_problems(member, package, folder, known, out, check_template, sources, notes)
    except (TypeError, AttributeError, ValueError) as exc:  # a shape these checks do not expect
        if not schema_refused:  # else the schema error already says why; otherwise say it, never skip silently
            out.append(((), f"the task could not be checked ({type(exc).__name__}: {exc})"))
    return out


def _member_problems(member, package, folder, known, out, check_template, sources: Sources,
                     notes: list[tuple[tuple, str]]) -> None:
    for keypath, dotted in iter_hooks(member):
        verdict = check_hook(package, dotted, folder, sources=sources)
        if verdict.problem:
            out.append((keypath, verdict.problem))
        elif verdict.note:
            notes.append((keypath, verdict.note))
    filters = member.get("filter_list") or []
    pipelines = [isinstance(e, dict) and isinstance(e.get("filter"), list) for e in filters]
    if any(pipelines) and not all(pipelines):
        out.append((("filter_list",), "mixes lm-eval pipelines ({name, filter: [...]}) with avhb filter steps "
                                      "({filter: NAME}); use one form"))
    if "reasoning_tags" in member:
        try:
            tag_pairs(member["reasoning_tags"])
        except ValueError as exc:
            out.append((("reasoning_tags",), str(exc)))
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
                if field_name == "filter" and name in _registered_filters(member, folder, sources):
                    continue  # a task module registers it in a peer's registry when imported (PeerFilter)
                hint = f"; did you mean {', '.join(close)}?" if close else f" (see `avhb list {field_name}s`)"
                out.append((keypath, f"unknown {field_name} {name!r}{hint}"))


_REGISTER_FILTER = re.compile(r"""register_filter\(\s*["']([^"']+)["']""")


def _registered_filters(member: dict[str, Any], folder: Path, sources: Sources) -> set[str]:
    """The filter names the task's hook modules register in a peer's registry
    (lm-eval's ``@register_filter("NAME")``), read from their source."""
    out: set[str] = set()
    for _, dotted in iter_hooks(member):
        rel, module, _ = split_hook(dotted)
        where = os.path.normpath(os.path.join(str(folder), rel)) if rel else str(folder)
        found = find_hook_module(module, where)
        if found is None:
            continue

        def read(path: str = found.path) -> frozenset[str]:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    return frozenset(_REGISTER_FILTER.findall(fh.read()))
            except OSError:
                return frozenset()

        out |= sources.once(("registers", found.path), read)
    return out


# Hugging Face evaluate's own metrics that task files name bare (lm-eval falls back to evaluate.load)
EVALUATE_METRICS = frozenset({
    "accuracy", "bertscore", "bleu", "bleurt", "brier_score", "cer", "character", "charcut_mt", "chrf", "code_eval",
    "comet", "competition_math", "coval", "cuad", "exact_match", "f1", "frugalscore", "glue", "google_bleu",
    "indic_glue", "mae", "mahalanobis", "mape", "mase", "matthews_correlation", "mauve", "mean_iou", "meteor", "mse",
    "nist_mt", "pearsonr", "perplexity", "poseval", "precision", "r_squared", "recall", "rl_reliability", "roc_auc",
    "rouge", "sacrebleu", "sari", "seqeval", "smape", "spearmanr", "squad", "squad_v2", "super_glue", "ter",
    "trec_eval", "wer", "wiki_split", "xnli", "xtreme_s"})


def _evaluate_name(name: str, folder: Path, close: list[str], sources: Sources) -> bool:
    """An unregistered metric name that the ``evaluate`` fallback will load:
    ``evaluate/NAME``, one of evaluate's own metrics, a module file or folder
    next to the YAML, or a bare name that resembles no registered metric (a
    close one is a typo)."""
    if name.startswith("evaluate/") or name in EVALUATE_METRICS:
        return True
    if name.endswith(".py") or "/" in name:
        return (sources.note(str(folder / name)) is not None or sources.note(str(folder / (name + ".py"))) is not None
                or (folder / name).is_dir())
    return not close
