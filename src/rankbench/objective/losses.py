"""Pairwise losses as objects that declare their family, and label-pair rescaling.

A loss of a pair (i, j), i preferred, is a function of the score difference t = z_i - z_j
(margin 1).  It belongs to one of two families, and each oracle declares the families it
evaluates (``PairOracle.loss_families``):

* ``piecewise``: ``sum_k weight_k * max(0, margin + offset_k - t)^power_k``, a sum of shifted
  hinge (power 1) and squared-hinge (power 2) pieces.  Every oracle evaluates these; the
  counting and tree oracles at a cost linear in the number of pieces (Chapelle & Keerthi
  sect. 4.1-4.2).  Squared hinge = one piece; Huber = max(0, 1 - t)^2 - max(0, -t)^2, two
  pieces (sect. 4.1); hinge = one piece of power 1.
* ``smooth``: any loss given by its value and derivatives in t (vectorized over numpy arrays).
  Only the oracles that see every pair (pairs, brute) evaluate it exactly; the others use
  its ``approximation`` (a piecewise loss) when it has one, and refuse it otherwise.

Margin rescaling (Chapelle sect. 6.2) sets the margin of a label pair to M_ab instead of 1:
a piecewise loss uses ``M_ab + offset_k``, a smooth loss is shifted to ``loss(t - (M_ab - 1))``;
slack rescaling multiplies the pair's loss by W_ab.  A pair is *active* for a piece with
margin m when ``z_j > z_i - m`` evaluated in floating point exactly so; every oracle uses that
same predicate, which makes them agree bit for bit on which pairs sit on the margin.

Losses live in ``LOSSES`` (name -> loss); a module of ``rankbench.objective`` adds one with
``register_loss`` (``logistic.py`` does), found by ``get_loss`` without any other edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankbench.plugins import Registry

FAMILIES = ("piecewise", "smooth")


class PairLoss:
    """A pairwise loss of t = z_i - z_j (unit margin): what oracles and optimizers need to know of it.

    ``family`` ("piecewise" | "smooth"), ``differentiable`` (C^1: a gradient, not only a
    subgradient), ``has_hessian`` (a generalized Hessian for Newton-type optimizers),
    ``max_curvature`` (sup of loss''(t): bounds the SGD step), ``approximation`` (a piecewise
    loss that oracles without this family evaluate instead, or None)."""

    name: str
    family: ClassVar[str]
    approximation: PairLoss | None = None

    @property
    def differentiable(self) -> bool:
        raise NotImplementedError

    @property
    def has_hessian(self) -> bool:
        raise NotImplementedError

    @property
    def max_curvature(self) -> float:
        raise NotImplementedError

    def value(self, t: np.ndarray) -> np.ndarray:
        """loss(t), elementwise."""
        raise NotImplementedError

    def derivative(self, t: np.ndarray) -> np.ndarray:
        """loss'(t) (a subgradient where loss is not differentiable), elementwise."""
        raise NotImplementedError

    def second_derivative(self, t: np.ndarray) -> np.ndarray:
        """loss''(t) (the generalized one at kinks), elementwise; ValueError without a Hessian."""
        raise NotImplementedError


@dataclass(frozen=True)
class Piece:
    """``weight * max(0, margin + offset - t)^power``: a hinge (power 1) or squared hinge (power 2)."""

    weight: float
    offset: float
    power: int

    def __post_init__(self):
        if self.power not in (1, 2):
            raise ValueError(f"a loss piece has power 1 (hinge) or 2 (squared hinge), got {self.power}")
        if not (np.isfinite(self.weight) and np.isfinite(self.offset)):
            raise ValueError(f"a loss piece needs a finite weight and offset, got {self}")


@dataclass(frozen=True)
class PiecewiseLoss(PairLoss):
    """Sum of shifted hinge / squared-hinge pieces; evaluated by every oracle, O(pieces) passes."""

    name: str
    pieces: tuple[Piece, ...]
    description: str = ""
    family: ClassVar[str] = "piecewise"

    def __post_init__(self):
        if not self.pieces:
            raise ValueError(f"loss {self.name!r} has no pieces")

    @property
    def differentiable(self) -> bool:
        return all(p.power == 2 for p in self.pieces)

    @property
    def has_hessian(self) -> bool:
        return self.differentiable

    @property
    def max_curvature(self) -> float:
        """sup over t of the sum of 2 * weight over the squared pieces active at t."""
        knots = sorted(((1.0 + p.offset, 2.0 * p.weight) for p in self.pieces if p.power == 2),
                       reverse=True)
        running = np.cumsum([c for _, c in knots]) if knots else np.zeros(1)
        return float(max(0.0, running.max()))

    def value(self, t):
        t = np.asarray(t, dtype=np.float64)
        return sum(p.weight * np.maximum(0.0, 1.0 + p.offset - t) ** p.power for p in self.pieces)

    def derivative(self, t):
        t = np.asarray(t, dtype=np.float64)
        out = np.zeros_like(t)
        for p in self.pieces:
            r = np.maximum(0.0, 1.0 + p.offset - t)
            out -= p.weight * (2.0 * r if p.power == 2 else (r > 0.0).astype(np.float64))
        return out

    def second_derivative(self, t):
        if not self.has_hessian:
            raise ValueError(f"the {self.name} loss has no Hessian")
        t = np.asarray(t, dtype=np.float64)
        return sum(2.0 * p.weight * (t < 1.0 + p.offset) for p in self.pieces)


@dataclass(frozen=True)
class SmoothLoss(PairLoss):
    """A smooth loss from vectorized callables: ``fun``, ``grad`` (first derivative), ``hess``
    (second derivative, None = no Hessian); evaluated exactly by the pairs and brute oracles."""

    name: str
    fun: Callable[[np.ndarray], np.ndarray]
    grad: Callable[[np.ndarray], np.ndarray]
    hess: Callable[[np.ndarray], np.ndarray] | None
    curvature_bound: float
    approximation: PiecewiseLoss | None = None
    description: str = ""
    family: ClassVar[str] = "smooth"

    @property
    def differentiable(self) -> bool:
        return True

    @property
    def has_hessian(self) -> bool:
        return self.hess is not None

    @property
    def max_curvature(self) -> float:
        return float(self.curvature_bound)

    def value(self, t):
        return self.fun(np.asarray(t, dtype=np.float64))

    def derivative(self, t):
        return self.grad(np.asarray(t, dtype=np.float64))

    def second_derivative(self, t):
        if self.hess is None:
            raise ValueError(f"the {self.name} loss has no Hessian")
        return self.hess(np.asarray(t, dtype=np.float64))


SQUARED_HINGE = PiecewiseLoss("squared_hinge", (Piece(1.0, 0.0, 2),),
                              "max(0, 1 - t)^2 (L2-loss RankSVM, Chapelle & Keerthi eq. 1)")
HUBER = PiecewiseLoss("huber", (Piece(1.0, 0.0, 2), Piece(-1.0, -1.0, 2)),
                      "max(0, 1 - t)^2 - max(0, -t)^2 (Chapelle & Keerthi sect. 4.1)")
HINGE = PiecewiseLoss("hinge", (Piece(1.0, 0.0, 1),), "max(0, 1 - t) (L1-loss RankSVM, Joachims 2006)")

LOSSES: Registry[PairLoss] = Registry("loss", ("rankbench.objective",))


def register_loss(loss: PairLoss) -> PairLoss:
    """Add ``loss`` to ``LOSSES`` under its name; ValueError when another loss has that name."""
    if loss.family not in FAMILIES:
        raise ValueError(f"loss {loss.name!r}: unknown family {loss.family!r}; expected one of {FAMILIES}")
    return LOSSES.add(loss.name, loss)


for _loss in (SQUARED_HINGE, HINGE, HUBER):
    register_loss(_loss)


def loss_names() -> list[str]:
    """Names of every registered loss (the modules of rankbench.objective imported first), in
    the order they were registered."""
    return list(LOSSES.items())


def get_loss(loss: str | PairLoss) -> PairLoss:
    """The loss object for a name of ``LOSSES`` (or ``loss`` itself); ValueError naming the known ones."""
    if isinstance(loss, PairLoss):
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(loss_names())} or a "
                         "PairLoss")
    return LOSSES[loss]


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


RESCALINGS = ("margin", "slack")


def ideal_positions(y: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """1-based position of each document in its query's ideal ranking (labels descending, ties
    by document index: documents of one label are interchangeable there); O(n log n)."""
    y = np.asarray(y)
    pos = np.empty(y.shape[0], dtype=np.float64)
    for q in range(len(query_ptr) - 1):
        a, b = int(query_ptr[q]), int(query_ptr[q + 1])
        order = np.argsort(-y[a:b].astype(np.float64), kind="mergesort")
        pos[a + order] = np.arange(1, b - a + 1, dtype=np.float64)
    return pos


def dcg_discount(pos: np.ndarray) -> np.ndarray:
    """1 / log2(1 + p): the DCG discount of 1-based position p (the paper's 1/log2(p) read as
    the usual DCG discount; 1/log2(1) would be infinite at the top position)."""
    return 1.0 / np.log2(1.0 + np.asarray(pos, dtype=np.float64))


def doc_gain(y, query_ptr) -> np.ndarray:
    """delta_i = 2^y_i - 1 (the DCG gain): delta_ij = (delta_i - delta_j)^2, margin |2^y_i - 2^y_j|."""
    return 2.0 ** np.asarray(y, dtype=np.float64) - 1.0


def doc_ideal_dcg(y, query_ptr) -> np.ndarray:
    """delta_i = (2^y_i - 1) / log2(1 + p_i), p_i the ideal position: document i's DCG term in its
    query's ideal ranking (non-decreasing in the label within a query)."""
    return doc_gain(y, query_ptr) * dcg_discount(ideal_positions(y, query_ptr))


# Chapelle sect. 6.2's three kinds of cost delta_ij of a preference pair (i preferred over j):
# "label" (a function of the two labels, DELTAS or a callable / K x K matrix), "position" (the DCG
# difference of swapping i and j at their positions in the ideal ranking, POSITION_DELTAS) and
# "document" (delta_ij = (delta_i - delta_j)^2 of a per-document delta_i, DOCUMENT_DELTAS), the
# case whose margin rescaling stays O(n log n) (margin |delta_i - delta_j|: scores shifted by delta).
POSITION_DELTAS = ("dcg_swap",)
DOCUMENT_DELTAS: dict[str, Callable] = {"gain": doc_gain, "ideal_dcg": doc_ideal_dcg}
DELTA_KINDS = ("label", "position", "document")


def delta_kind(delta) -> str:
    """Which kind of pair cost ``delta`` names (label | position | document); ValueError naming the
    known deltas for an unknown name."""
    if delta is None:
        return "label"
    if isinstance(delta, str):
        if delta in DELTAS:
            return "label"
        if delta in POSITION_DELTAS:
            return "position"
        if delta in DOCUMENT_DELTAS:
            return "document"
        raise ValueError(f"unknown delta {delta!r}; expected a label-pair cost ({', '.join(DELTAS)}, a "
                         f"callable or a K x K matrix), a position-based cost ({', '.join(POSITION_DELTAS)}) "
                         f"or a per-document cost ({', '.join(DOCUMENT_DELTAS)})")
    return "label"


def check_rescaling_name(rescaling) -> None:
    """ValueError unless ``rescaling`` is None, 'margin' or 'slack'."""
    if rescaling is not None and rescaling not in RESCALINGS:
        raise ValueError(f"unknown rescaling {rescaling!r}; expected None, 'margin' or 'slack'")


def pair_costs(kind: str, delta, y: np.ndarray, query_ptr: np.ndarray, hi, lo) -> np.ndarray:
    """delta_ij of the preference pairs (hi[k] preferred over lo[k]; global indices, numpy arrays
    that broadcast) for a position or document ``kind``; O(number of pairs)."""
    y = np.asarray(y, dtype=np.float64)
    if kind == "position":
        disc = dcg_discount(ideal_positions(y, query_ptr))
        return (2.0 ** y[hi] - 2.0 ** y[lo]) * np.abs(disc[hi] - disc[lo])
    if kind == "document":
        dd = DOCUMENT_DELTAS[delta](y, query_ptr)
        return (dd[hi] - dd[lo]) ** 2
    raise ValueError(f"pair_costs: kind {kind!r} is not position or document")


def rescaling_matrices(levels: np.ndarray, rescaling: str | None, delta) -> tuple[np.ndarray, np.ndarray]:
    """(margin, weight) matrices for Chapelle sect. 6.2: margin rescaling sqrt(delta), slack rescaling delta.

    For a position or document cost (no label-pair matrix) these are the unit matrices, except
    document margin rescaling: margin 0, the oracle shifting each score by -delta_i instead."""
    if rescaling is None or delta_kind(delta) == "position" or (
            delta_kind(delta) == "document" and rescaling == "slack"):
        return pair_matrix(levels, None, 1.0, "pair margin"), pair_matrix(levels, None, 1.0, "pair weight")
    if delta_kind(delta) == "document":
        return pair_matrix(levels, None, 0.0, "pair margin"), pair_matrix(levels, None, 1.0, "pair weight")
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
