"""Logistic pairwise loss log(1 + exp(-t)): RankNet's loss (Burges et al. 2005) in eq. (1).

Chapelle & Keerthi (end of sect. 4.2) note that the counting method handles any piecewise
quadratic loss at a cost linear in the number of pieces, and that the logistic loss is well
approximated by one (Keerthi & Shevade 2007).  So this loss is exact for the oracles that see
every pair (pairs, brute) and, for the counting and tree oracles, is replaced by

    q(t) = sum_k a_k max(0, o_k - t)^2,      8 shifted squared hinges,

    knot o_k     -6.813      -3.925      -2.332      -1.135   | 1.135     2.332     3.925     6.813
    weight a_k   -0.0023006  -0.0182532  -0.0436311  -0.0536866 | 0.0536866 0.0436311 0.0182532 0.0023006

(in ``Piece`` terms offset_k = o_k - 1, since a piece's knot sits at margin + offset).  The
weights are antisymmetric, so q(t) - q(-t) = -t exactly as for the logistic loss; the outer
weight is fixed by sum_k a_k o_k = 1/2, so q(t) = -t for t < -6.813 (the logistic loss's
asymptote) and q(t) = 0 for t > 6.813.  q is convex (its curvature 2 sum_{o_k > t} a_k lies in
[0, 0.2357]) and C^1, so Newton-type optimizers keep working.  Knots and weights are a minimax
fit (weights by a linear program on a grid for fixed knots, knots by Nelder-Mead, rounded):

    max over real t of |q(t) - log(1 + e^-t)| = 1.2790e-3   (reached at t = 0),

below 1.28e-3 everywhere: beyond the outer knots the error is log(1 + e^-|t|) <= 1.0988e-3
(in exact arithmetic; in floating point the canceling pieces lose ~1e-16 t^2 at large |t|,
as Huber's two pieces do).  Consequence for eq. (1): |f_q(w) - f(w)| <= 1.28e-3 C |P| at every
w, hence |min f_q - min f| <= 1.28e-3 C |P| and, f being 1-strongly convex,
||w_q - w*|| <= 2 sqrt(1.28e-3 C |P|) between the two minimizers.
"""

from __future__ import annotations

import numpy as np

from rankbench.objective.losses import Piece, PiecewiseLoss, SmoothLoss, register_loss

_KNOTS = (1.135, 2.332, 3.925, 6.813)
_INNER_WEIGHTS = (0.0536866, 0.0436311, 0.0182532)
# the outer weight makes sum_k a_k o_k = 1/2: slope -1 left of every knot
_WEIGHTS = (*_INNER_WEIGHTS,
            (0.25 - sum(a * o for a, o in zip(_INNER_WEIGHTS, _KNOTS, strict=False))) / _KNOTS[-1])
MAX_ERROR = 1.28e-3  # bound on |q(t) - log(1 + e^-t)| over every real t (1.2790e-3 at t = 0)

LOGISTIC_PIECEWISE = PiecewiseLoss(
    "logistic_piecewise",
    tuple(Piece(sign * a, sign * o - 1.0, 2)
          for sign in (1.0, -1.0) for o, a in zip(_KNOTS, _WEIGHTS, strict=True)),
    f"8 shifted squared hinges within {MAX_ERROR} of log(1 + exp(-t)) (objective/logistic.py)")



def logistic_value(t: np.ndarray) -> np.ndarray:
    """log(1 + e^-t) without overflow."""
    return np.logaddexp(0.0, -t)


def logistic_derivative(t: np.ndarray) -> np.ndarray:
    """-1 / (1 + e^t)."""
    from scipy.special import expit  # here: scipy.special costs more to import than a fit

    return -expit(-t)


def logistic_second_derivative(t: np.ndarray) -> np.ndarray:
    """e^t / (1 + e^t)^2, at most 1/4."""
    from scipy.special import expit

    return expit(t) * expit(-t)


LOGISTIC = register_loss(SmoothLoss(
    "logistic",
    fun=logistic_value,
    grad=logistic_derivative,
    hess=logistic_second_derivative,
    curvature_bound=0.25,
    approximation=LOGISTIC_PIECEWISE,
    description="log(1 + exp(-t)) (RankNet); counting/tree oracles: LOGISTIC_PIECEWISE"))
