"""The metric registry: every metric key records, configs and ``evaluate`` know, defined once.

A metric is one function in ``rankbench.metrics.definitions`` decorated with
``@register_metric``: its key (``"map"``, or a template with a cutoff, ``"ndcg@{k}"``), the
cutoffs stored in every record, whether it has per-query values, whether the convention
changes it, and a one-line description.  The function maps a ``QueryTable`` (the ranked
lists of one scored set, with a cache for computations several metrics share) and the
cutoff to one value per query (NaN where undefined); ``set_value`` overrides the mean over
defined queries where a metric pools differently (pairwise accuracy pools pairs; a pooled
metric has no per-query values).  ``DEFAULT_METRICS`` and ``METRIC_KEYS``
(``rankbench.metrics.names``) are read from here, ``evaluate`` computes through it: adding a
metric is one decorated function.

This module and ``definitions`` import neither numba nor the kernels (the functions import
``rankbench.metrics.measures`` when they run), so configs validate metric names cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankbench.plugins import Registry

PerQuery = Callable[["QueryTable", "int | None"], np.ndarray]


@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring)."""

    key: str  # "map" or a template with "{k}", e.g. "ndcg@{k}", "p@{k}_macro"
    function: PerQuery
    description: str
    default_cutoffs: tuple[int, ...] = ()  # cutoff metrics: the keys every record holds
    default: bool = True  # plain metrics: held by every record (else computed when asked)
    pooled: bool = False  # one value for the whole set: no per-query values
    convention: bool = False  # the convention changes its value (beyond the tie order)
    set_value: Callable[[QueryTable, int | None], float] | None = None
    # why a query's value can be undefined (NaN), e.g. one class only: the mean then counts the
    # queries it leaves out in an UndefinedMetricWarning ("": NaN only marks a requested skip)
    undefined: str = ""
    pattern: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = "^" + re.escape(self.key).replace(re.escape("{k}"), "([1-9][0-9]*)") + "$"
        object.__setattr__(self, "pattern", re.compile(regex))

    @property
    def has_cutoff(self) -> bool:
        return "{k}" in self.key

    def keys(self) -> list[str]:
        """The record keys this metric contributes to ``DEFAULT_METRICS`` (or, if not default,
        to the extras)."""
        if self.has_cutoff:
            return [self.key.format(k=k) for k in self.default_cutoffs]
        return [self.key]


# the definitions module registers every metric (a module, not a package: the kernels' modules
# of rankbench.metrics need numba, naming a metric must not)
METRICS: Registry[Metric] = Registry("metric", ("rankbench.metrics.definitions",))


def register_metric(key: str, description: str, *, default_cutoffs: Iterable[int] = (),
                    default: bool = True, pooled: bool = False, convention: bool = False,
                    set_value: Callable[[QueryTable, int | None], float] | None = None,
                    undefined: str = "") -> Callable[[PerQuery], PerQuery]:
    """Decorator: register ``function(table, k) -> per-query values`` under ``key``."""

    def deco(function: PerQuery) -> PerQuery:
        metric = Metric(key, function, description, tuple(default_cutoffs), default, pooled,
                        convention, set_value, undefined)
        if metric.has_cutoff and not metric.default_cutoffs and default:
            raise ValueError(f"metric {key!r}: a cutoff metric held by every record needs "
                             "default_cutoffs")
        METRICS.add(key, metric, module=function.__module__)
        return function

    return deco


def _load() -> dict[str, Metric]:
    return METRICS.items()


def metrics() -> list[Metric]:
    """Every registered metric, in registration order."""
    return list(_load().values())


def default_keys() -> tuple[str, ...]:
    """Keys ``evaluate`` computes when no list is given (every record holds them)."""
    return tuple(k for m in metrics() if m.default for k in m.keys())


def extra_keys() -> tuple[str, ...]:
    """Keys computed only when asked for (and stored in every record by the runner)."""
    return tuple(k for m in metrics() if not m.default for k in m.keys())


def parse_key(key: str) -> tuple[Metric, int | None]:
    """(metric, cutoff) of a record key; ValueError naming the known forms."""
    for metric in _load().values():
        hit = metric.pattern.match(key)
        if hit:
            return metric, (int(hit.group(1)) if metric.has_cutoff else None)
    forms = ", ".join(m.key.replace("{k}", "K") for m in _load().values())
    raise ValueError(f"unknown metric {key!r}; known: {forms}")


class QueryTable:
    """The ranked lists of one scored set, the convention, and a cache of shared computations
    (one NDCG table up to the largest cutoff asked for, one pass of binary statistics ...)."""

    def __init__(self, ranked: Any, keys: Iterable[str], convention: str,
                 skip_no_relevant: bool = False):
        self.r = ranked
        self.convention = convention
        self.skip = bool(skip_no_relevant)
        self.parsed = {key: parse_key(key) for key in keys}
        self.kmax: dict[str, int] = {}
        for metric, k in self.parsed.values():
            if k is not None:
                self.kmax[metric.key] = max(self.kmax.get(metric.key, 0), k)
        self._cache: dict[str, Any] = {}

    def shared(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per table under ``name``."""
        if name not in self._cache:
            self._cache[name] = compute()
        return self._cache[name]

    def values(self, key: str) -> np.ndarray:
        """Per-query values of ``key`` (queries in order of first appearance)."""
        metric, k = self.parsed[key]
        if metric.pooled:
            raise ValueError(f"{key} is one value for the whole set (no per-query values)")
        return metric.function(self, k)

    def value(self, key: str) -> float:
        """The metric's value over the set: the mean over defined queries unless the metric
        says otherwise (``set_value``)."""
        from rankbench.metrics.measures import mean_defined

        metric, k = self.parsed[key]
        if metric.set_value is not None:
            return float(metric.set_value(self, k))
        if metric.undefined:  # never drop a query silently: say how many were left out
            return mean_defined(self.values(key), key, metric.undefined, stacklevel=4)
        return mean_defined(self.values(key))
