"""The built-in task packs, registered as one plugin (``tasks``): the task
package ``avhb.tasks`` (every pack's YAML) and what each pack registers
itself in ``tasks/<pack>/plugin.py``, with the same ``@hookimpl`` functions
a third-party plugin writes (judge parsers, commands).  A pack's commands
live in ``tasks/<pack>/commands.py``.  A name two packs register, or a hook
a pack implements that is not gathered here, is an error."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

from avhb import hookimpl

GATHERED = ("avhb_judge_parsers", "avhb_commands")
_HERE = Path(__file__).resolve().parent


def pack_plugins() -> list[ModuleType]:
    """Each pack's registration module (``<pack>/plugin.py``), by pack name."""
    out = []
    for info in sorted(pkgutil.iter_modules([str(_HERE)]), key=lambda i: i.name):
        if not (info.ispkg and (_HERE / info.name / "plugin.py").is_file()):
            continue
        out.append(check_gathered(importlib.import_module(f"{__package__}.{info.name}.plugin")))
    return out


def check_gathered(module: ModuleType) -> ModuleType:
    """``module``, if every hook it implements is one this plugin gathers."""
    other = sorted(n for n, v in vars(module).items() if hasattr(v, "avhb_impl") and n not in GATHERED)
    if other:
        raise RuntimeError(f"{module.__name__} implements {', '.join(other)}, which tasks/plugin.py does not "
                           f"gather (it gathers {', '.join(GATHERED)}): add it there")
    return module


def gathered(hook: str, modules: list[ModuleType] | None = None) -> dict[str, str]:
    """Every pack's ``hook`` table merged; a name two packs register raises."""
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for module in pack_plugins() if modules is None else modules:
        impl = getattr(module, hook, None)
        for name, path in ((impl() or {}) if impl else {}).items():
            if name in out:
                raise RuntimeError(f"{hook}: {name!r} is registered by {owner[name]} and by {module.__name__}")
            out[name], owner[name] = path, module.__name__
    return out


@hookimpl
def avhb_task_packages():
    return ["avhb.tasks"]


@hookimpl
def avhb_judge_parsers():
    return gathered("avhb_judge_parsers")


@hookimpl
def avhb_commands():
    return gathered("avhb_commands")
