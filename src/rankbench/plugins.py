"""Registries filled by the modules of a package: a new loss or optimizer is one new file.

The loss registry (``rankbench.objective.losses``) and the optimizer registry
(``rankbench.optim.registry``) import every module of their package once, so a module
that registers itself (``register_loss``, ``@register_optimizer``) needs no line elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil

_IMPORTED: set[str] = set()


def import_submodules(package: str) -> None:
    """Import every module of ``package`` (not recursive) once; their import errors propagate."""
    if package in _IMPORTED:
        return
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    _IMPORTED.add(package)
