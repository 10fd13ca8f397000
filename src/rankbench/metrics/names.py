"""The metric keys records use (``evaluate``'s names), read from the metric registry
(``rankbench.metrics.registry``; the definitions are ``rankbench.metrics.definitions``), which
imports no numba, so config validation can check a metric name cheaply."""

from __future__ import annotations

from rankbench.metrics.registry import default_keys, extra_keys

# computed by ``evaluate`` when no list is given (and stored in every record)
DEFAULT_METRICS: tuple[str, ...] = default_keys()
# computed when asked for: R-precision and MAUC over the pooled set (one ranking)
EXTRA_METRICS: tuple[str, ...] = extra_keys()
METRIC_KEYS: tuple[str, ...] = DEFAULT_METRICS + EXTRA_METRICS
