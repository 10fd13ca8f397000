"""Solvers: the names configs use (``prsvm_plus``, ``spd_pegasos`` ...) and how each is built.

A ``Solver`` is how the harness meets an estimator: ``make(params)`` builds it (and checks its
parameters, so a bad config fails before any data is read), ``canonical(params)`` gives the
one spelling of a parameter set that names a run, and an optional ``path`` fits a list of C
values at once (RankSVM's warm-started C path), which the estimator declares and validates
itself.  The harness sees "a unit that yields records" and never an estimator class.

Solvers are registered with ``@register_solver(name)`` on a factory ``params -> estimator``
(or ``SOLVERS.add(name, Solver(...))``) by the modules of ``rankbench.estimators``; the
harness adds its own (the papers' peer programs) the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rankbench.plugins import Registry

Factory = Callable[[dict[str, Any]], Any]


class SolverUnavailable(RuntimeError):
    """A registered solver that cannot run on this machine (e.g. an external peer program not
    built): the harness stores the run as ``status="skipped"`` with this message, never as a
    failure.  The message says what to do (e.g. "run make peers")."""


@dataclass(frozen=True)
class Solver:
    """A registered solver: how to build its estimator, and what it declares.

    ``build(params)``: the unfitted estimator (raises on bad parameters);
    ``normalize(params)``: the canonical spelling of a parameter set (None: as given);
    ``path(params, Cs, X, y, qid)``: fit every C of ``Cs`` (increasing) at once, returning one
    ``(estimator, FitReport)`` per C (None: the solver fits one C at a time);
    ``check_path(params, Cs)``: problems of such a path before any data is read.
    """

    name: str
    build: Factory
    normalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    path: Callable[..., list[tuple[Any, Any]]] | None = None
    check_path: Callable[[dict[str, Any], Any], list[str]] | None = None

    def make(self, params: dict[str, Any] | None = None) -> Any:
        """The estimator for ``params`` with its own parameter checks run."""
        est = self.build(dict(params or {}))
        check = getattr(est, "check_params", None)
        if callable(check):
            check()
        return est

    def problems(self, params: dict[str, Any]) -> list[str]:
        """Why ``params`` cannot run on this solver (empty: they can), without any data."""
        try:
            self.make(params)
        except SolverUnavailable:
            return []  # a peer not built: its runs are stored as skipped, not refused
        except Exception as exc:  # noqa: BLE001 - any constructor or check error is the answer
            return [f"solver {self.name!r} refuses parameters {params}: {type(exc).__name__}: {exc}"]
        return []

    def canonical(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` in the one spelling that names a run."""
        return dict(self.normalize(dict(params)) if self.normalize else params)

    def path_problems(self, params: dict[str, Any], Cs: Any) -> list[str]:
        """Why a warm-started path over ``Cs`` cannot run (empty: it can)."""
        if self.path is None:
            return [f"solver {self.name!r} fits one C at a time (it declares no warm-started "
                    "path); use cold per-C runs (warm_start=false)"]
        return list(self.check_path(params, Cs)) if self.check_path else []


SOLVERS: Registry[Solver] = Registry("solver", ("rankbench.estimators",))


def register_solver(name: str, **declared: Any) -> Callable[[Factory], Factory]:
    """Decorator: register ``factory(params) -> estimator`` as the solver ``name`` (``declared``:
    the ``Solver`` fields normalize, path, check_path)."""

    def deco(factory: Factory) -> Factory:
        SOLVERS.add(name, Solver(name, factory, **declared), module=factory.__module__)
        return factory

    return deco


def get_solver(name: str) -> Solver:
    """The solver registered as ``name``; ValueError naming the known ones (and the closest)."""
    return SOLVERS.get(name)


def solver_names() -> list[str]:
    """All registered solver names, sorted."""
    return SOLVERS.names()


def make_solver(name: str, params: dict[str, Any] | None = None) -> Any:
    """Build the estimator registered as ``name`` with ``params`` (its parameter checks run)."""
    return get_solver(name).make(params)
