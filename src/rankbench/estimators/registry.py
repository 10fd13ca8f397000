"""Solver registry: config names (``prsvm_plus``, ``spd_pegasos`` ...) to estimator factories."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

Factory = Callable[[dict[str, Any]], Any]

_FACTORIES: dict[str, Factory] = {}


class SolverUnavailable(RuntimeError):
    """A registered solver that cannot run on this machine (e.g. an external peer program not
    built): the harness stores the run as ``status="skipped"`` with this message, never as a
    failure.  The message says what to do (e.g. "run make peers")."""

# Modules that register solvers when imported; a module that does not exist yet
# (a solver family not built) simply contributes no names.
_SOLVER_MODULES = (
    "rankbench.estimators.ranksvm",
    "rankbench.estimators.spd",
    "rankbench.estimators.lambdamart",
    "rankbench.estimators.auc_svm",
    "rankbench.estimators.binary_svm",
    "rankbench.peers.solvers",
)


def register_solver(name: str) -> Callable[[Factory], Factory]:
    """Decorator: register ``factory(params) -> estimator`` under ``name``."""

    def deco(factory: Factory) -> Factory:
        if name in _FACTORIES and _FACTORIES[name] is not factory:
            raise ValueError(f"solver {name!r} registered twice")
        _FACTORIES[name] = factory
        return factory

    return deco


def _load_all() -> None:
    for mod in _SOLVER_MODULES:
        try:
            import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def solver_names() -> list[str]:
    """All registered solver names, sorted."""
    _load_all()
    return sorted(_FACTORIES)


def make_solver(name: str, params: dict[str, Any] | None = None) -> Any:
    """Build the estimator registered as ``name`` with ``params``; clear error for unknown names."""
    _load_all()
    if name not in _FACTORIES:
        known = ", ".join(sorted(_FACTORIES)) or "(none)"
        raise ValueError(f"unknown solver {name!r}; known solvers: {known}")
    return _FACTORIES[name](dict(params or {}))
