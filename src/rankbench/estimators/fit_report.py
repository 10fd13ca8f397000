"""``FitReport``: what a fit tells the harness, one typed object instead of attribute probing.

Every rankbench estimator (and every peer wrapper) returns it from ``fit_report()`` after
``fit``.  The harness copies it into a record's ``train`` block (times, iterations,
convergence, the accuracy reached), ``history`` and ``extra`` (solver facts); it never reads
an estimator's fitted attributes itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FitReport:
    """A finished fit: its times, iterations, convergence and facts.

    ``fit_time``: seconds of the fit proper, numba compilation excluded (None: the estimator
    does not know it; the harness then uses the wall time it measured around ``fit``);
    ``compile_time``: seconds of numba compilation (or cache loading) inside ``fit``;
    ``wall_total``: the whole ``fit`` when the estimator measures more than ``fit_time``
    (an external program's process, say; None: the harness's measure);
    ``n_iter`` / ``n_cg_iter``: outer and inner (conjugate-gradient) iterations;
    ``objective``: the final objective value; ``converged``: whether the stopping rule held
    (None: the method has no stopping rule, e.g. a fixed number of steps);
    ``convergence``: the accuracy reached, as the solver states it (stopping rule, tol,
    relative gap or certificate ...); ``history``: one row per iterate or checkpoint;
    ``extra``: solver facts for the record (pairs, shards, the loss evaluated ...);
    ``cpu_time``: process CPU seconds of the fit proper when the estimator measures them itself
    (one C of a path; None: the harness's measure minus ``compile_time``); ``train_extra``:
    more facts for the record's ``train`` block (a warm-started path's start and total time; the
    numba threads the fit ran on, ``threads``, which ``n_jobs=None`` chooses when the fit starts).
    """

    fit_time: float | None = None
    compile_time: float = 0.0
    wall_total: float | None = None
    n_iter: int | None = None
    n_cg_iter: int | None = None
    objective: float | None = None
    converged: bool | None = None
    convergence: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    cpu_time: float | None = None
    train_extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("n_iter", "n_cg_iter"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, int(v))
        for name in ("fit_time", "wall_total", "objective", "cpu_time"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, float(v))
        object.__setattr__(self, "compile_time", float(self.compile_time or 0.0))
        if self.converged is not None:
            object.__setattr__(self, "converged", bool(self.converged))


def report_of(est: Any) -> FitReport:
    """The ``FitReport`` of a fitted estimator from the fitted attributes rankbench's estimators
    document: ``fit_time_``, ``compile_time_``, ``n_iter_``, ``history_`` and, where the method
    has them, ``wall_total_s_``, ``n_cg_iter_``, ``objective_``, ``converged_``,
    ``convergence_``, ``extra_`` (the ``fit_report()`` of every estimator and peer wrapper)."""
    def get(name: str):
        return getattr(est, name, None)

    return FitReport(fit_time=get("fit_time_"), compile_time=get("compile_time_") or 0.0,
                     wall_total=get("wall_total_s_"), n_iter=get("n_iter_"),
                     n_cg_iter=get("n_cg_iter_"), objective=get("objective_"),
                     converged=get("converged_"), convergence=get("convergence_"),
                     history=list(get("history_") or []), extra=dict(get("extra_") or {}),
                     train_extra={} if get("n_threads_") is None else {"threads": int(get("n_threads_"))})
