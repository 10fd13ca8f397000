"""Loss objects against their definitions, and the logistic loss's piecewise-quadratic
approximation against what its docstring states (pieces, max error, asymptotes, convexity)."""

import re

import numpy as np
import pytest
from scipy.optimize import linprog

from rankbench.objective import get_loss, logistic, loss_names
from rankbench.objective.logistic import LOGISTIC, LOGISTIC_PIECEWISE, MAX_ERROR
from rankbench.objective.losses import HUBER, Piece, PiecewiseLoss, register_loss


def _exact(t):
    return np.log1p(np.exp(-t)) if np.all(t > -30) else np.logaddexp(0.0, -t)


def test_registry_knows_every_loss_and_refuses_unknown_names():
    assert set(loss_names()) >= {"squared_hinge", "hinge", "huber", "logistic"}
    assert get_loss("logistic") is LOGISTIC and get_loss(HUBER) is HUBER
    with pytest.raises(ValueError, match="unknown loss 'exponential'; expected one of .*logistic"):
        get_loss("exponential")
    with pytest.raises(ValueError, match="registered twice"):
        register_loss(PiecewiseLoss("huber", (Piece(1.0, 0.0, 2),)))
    with pytest.raises(ValueError, match="power 1"):
        Piece(1.0, 0.0, 3)


def test_hand_worked_values_of_the_hinge_built_losses():
    t = np.array([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0])
    np.testing.assert_allclose(get_loss("squared_hinge").value(t), [9.0, 2.25, 1.0, 0.25, 0.0, 0.0])
    np.testing.assert_allclose(get_loss("hinge").value(t), [3.0, 1.5, 1.0, 0.5, 0.0, 0.0])
    # Chapelle sect. 4.1: 1 - 2t below 0, (1 - t)^2 on [0, 1), 0 above
    np.testing.assert_allclose(HUBER.value(t), [5.0, 2.0, 1.0, 0.25, 0.0, 0.0])
    assert (get_loss("squared_hinge").max_curvature, HUBER.max_curvature) == (2.0, 2.0)
    assert not get_loss("hinge").has_hessian and not get_loss("hinge").differentiable
    assert LOGISTIC.has_hessian and LOGISTIC.max_curvature == 0.25


@pytest.mark.parametrize("name", ["squared_hinge", "huber", "logistic", "logistic_piecewise"])
def test_derivatives_match_finite_differences(name):
    loss = LOGISTIC_PIECEWISE if name == "logistic_piecewise" else get_loss(name)
    t = np.linspace(-9.0, 9.0, 3601) + 1e-3  # off the knots
    eps = 1e-6
    np.testing.assert_allclose(loss.derivative(t), (loss.value(t + eps) - loss.value(t - eps)) / (2 * eps),
                               atol=1e-7)
    np.testing.assert_allclose(loss.second_derivative(t),
                               (loss.derivative(t + eps) - loss.derivative(t - eps)) / (2 * eps), atol=1e-6)
    assert np.all(loss.second_derivative(t) <= loss.max_curvature + 1e-15)


def test_logistic_pieces_are_the_ones_the_docstring_states():
    doc = logistic.__doc__
    knots = [float(x) for x in re.search(r"knot o_k\s+(.*)", doc).group(1).replace("|", " ").split()]
    weights = [float(x) for x in re.search(r"weight a_k\s+(.*)", doc).group(1).replace("|", " ").split()]
    pieces = sorted((p.offset + 1.0, p.weight) for p in LOGISTIC_PIECEWISE.pieces)
    assert len(pieces) == 8 and all(p.power == 2 for p in LOGISTIC_PIECEWISE.pieces)
    np.testing.assert_allclose([o for o, _ in pieces], knots, atol=1e-12)
    np.testing.assert_allclose([a for _, a in pieces], weights, atol=5e-8)  # printed to 7 decimals
    a = np.array([a for _, a in pieces])
    o = np.array([o for o, _ in pieces])
    assert abs(a.sum()) < 1e-15 and abs(a @ o - 0.5) < 1e-15 and abs(a @ o**2) < 1e-15


def test_logistic_approximation_max_error_asymptotes_and_convexity():
    q = LOGISTIC_PIECEWISE
    t = np.linspace(-8.0, 8.0, 1_600_001)  # step 1e-5 over every knot and beyond
    err = np.abs(q.value(t) - _exact(t))
    assert err.max() <= MAX_ERROR
    assert err.max() >= 1.2789e-3  # the stated value 1.2790e-3 is reached (at t = 0)
    assert err[np.argmin(np.abs(t))] == pytest.approx(1.2790e-3, abs=1e-7)
    # beyond the outer knots: q = -t on the left, 0 on the right (error log(1 + e^-|t|) <= 1.0988e-3)
    far = np.array([-1e3, -50.0, -7.0])
    np.testing.assert_allclose(q.value(far), -far, rtol=0, atol=1e-9)
    assert np.all(q.value(np.array([6.9, 50.0, 1e6])) == 0.0)
    assert np.log1p(np.exp(-6.813)) < 1.0988e-3
    # convex and C^1: curvature levels between knots are >= 0; the derivative has no jumps
    curv = q.second_derivative(t)
    assert curv.min() >= -1e-15 and curv.max() == pytest.approx(0.2357, abs=1e-4)  # rounding below the knots
    d = q.derivative(t)
    assert np.max(np.abs(np.diff(d))) < 0.2358 * 1e-5 + 1e-12


def test_logistic_weights_are_minimax_for_their_knots():
    """No other weights on these knots beat the stated error by more than rounding: a linear
    program (minimax fit on a grid, slope -1 on the left) is the independent reference."""
    knots = np.array(sorted({abs(p.offset + 1.0) for p in LOGISTIC_PIECEWISE.pieces}))
    tt = np.linspace(-12, 12, 24001)
    A = np.maximum(0, knots[None, :] - tt[:, None]) ** 2 - np.maximum(0, -knots[None, :] - tt[:, None]) ** 2
    n, k = A.shape
    r = linprog(np.r_[np.zeros(k), 1.0], A_ub=np.block([[A, -np.ones((n, 1))], [-A, -np.ones((n, 1))]]),
                b_ub=np.r_[_exact(tt), -_exact(tt)], A_eq=[np.r_[knots, 0.0]], b_eq=[0.25],
                bounds=[(None, None)] * k + [(0, None)], method="highs")
    assert r.status == 0
    ours = np.abs(LOGISTIC_PIECEWISE.value(tt) - _exact(tt)).max()
    assert r.fun <= ours <= r.fun * 1.001
