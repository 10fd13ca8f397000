"""Pairwise losses as sums of shifted squared hinges (or one hinge), and label-pair rescaling.

Every loss of a pair (i, j), i preferred, is written in the score difference
t = z_i - z_j as ``sum_k sign_k * weight * max(0, margin + offset_k - t)^power``:
squared hinge = one piece (offset 0, power 2); Huber (Chapelle sect. 4.1) =
max(0, 1 - t)^2 - max(0, -t)^2, two pieces; hinge = one piece of power 1.
A pair is *active* for a piece with margin m when ``z_j > z_i - m`` evaluated in
floating point exactly so; every oracle uses that same predicate, which makes them
agree bit for bit on which pairs sit on the margin.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LOSSES = ("squared_hinge", "hinge", "huber")


def loss_pieces(loss: str) -> tuple[int, np.ndarray, np.ndarray]:
    """(power, offsets, signs) of ``loss``; ValueError for an unknown name."""
    if loss == "squared_hinge":
        return 2, np.array([0.0]), np.array([1.0])
    if loss == "huber":
        return 2, np.array([0.0, -1.0]), np.array([1.0, -1.0])
    if loss == "hinge":
        return 1, np.array([0.0]), np.array([1.0])
    raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")


def gain_difference(hi: float, lo: float) -> float:
    """Label-pair cost 2^hi - 2^lo (Chapelle sect. 6.2 with delta depending on labels only)."""
    return float(2.0**hi - 2.0**lo)


DELTAS: dict[str, Callable[[float, float], float]] = {
    "gain_difference": gain_difference,
    "label_difference": lambda hi, lo: float(hi - lo),
}


def pair_matrix(levels: np.ndarray, spec, default: float, what: str) -> np.ndarray:
    """K x K matrix over global label ranks (row = preferred label) from a scalar, matrix or callable."""
    k = levels.shape[0]
    if spec is None:
        return np.full((k, k), float(default))
    if callable(spec):
        m = np.array([[float(spec(a, b)) for b in levels] for a in levels], dtype=np.float64)
    elif np.ndim(spec) == 0:
        m = np.full((k, k), float(spec))
    else:
        m = np.asarray(spec, dtype=np.float64)
        if m.shape != (k, k):
            raise ValueError(f"{what} matrix must be {k}x{k} (one row/column per label level), got {m.shape}")
    hi, lo = np.triu_indices(k, 1)  # only entries with row label > column label are used
    used = m[lo, hi]
    if not np.all(np.isfinite(used)):
        raise ValueError(f"{what} must be finite for every label pair")
    if what == "pair weight" and np.any(used < 0):
        raise ValueError("pair weights must be >= 0")
    if what == "pair margin" and np.any(used < 0):
        raise ValueError("pair margins must be >= 0")
    return m


def rescaling_matrices(levels: np.ndarray, rescaling: str | None, delta) -> tuple[np.ndarray, np.ndarray]:
    """(margin, weight) matrices for Chapelle sect. 6.2: margin rescaling sqrt(delta), slack rescaling delta."""
    if rescaling is None:
        return pair_matrix(levels, None, 1.0, "pair margin"), pair_matrix(levels, None, 1.0, "pair weight")
    if isinstance(delta, str):
        if delta not in DELTAS:
            raise ValueError(f"unknown delta {delta!r}; expected one of {', '.join(DELTAS)} or a callable")
        delta = DELTAS[delta]
    d = pair_matrix(levels, delta, 1.0, "pair weight")
    if rescaling == "margin":
        return np.sqrt(np.maximum(d, 0.0)), pair_matrix(levels, None, 1.0, "pair weight")
    if rescaling == "slack":
        return pair_matrix(levels, None, 1.0, "pair margin"), d
    raise ValueError(f"unknown rescaling {rescaling!r}; expected None, 'margin' or 'slack'")
