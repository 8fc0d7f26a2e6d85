"""A package's public names, imported when first used (PEP 562).

``avhb``, ``avhb.media``, ``avhb.report`` and ``avhb.plugins.metrics``
export names that live in their modules without importing those modules
on ``import PACKAGE`` (so ``import avhb`` loads neither PyAV nor the
report).  Each package keeps a table ``name -> "module"`` or
``"module:attr"`` (another name there) and binds the function made here
as its module ``__getattr__``; a name, once looked up, is bound in the
package so the next lookup is a plain attribute.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping


def lazy_exports(namespace: MutableMapping[str, Any], exports: Mapping[str, str],
                 prefix: str = "") -> Callable[[str], Any]:
    """The ``__getattr__`` of the package whose globals are ``namespace``:
    ``exports`` maps each public name to ``module`` or ``module:attr``,
    ``prefix`` + module being the module's full name; any other name is an
    AttributeError naming the package."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        value = getattr(importlib.import_module(prefix + module), attr or name)
        namespace[name] = value
        return value

    return __getattr__
