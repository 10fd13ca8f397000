"""Issue 15: the perceptron learners and sofia-ml's step-size schedules, hand-worked; issue 13:
SPD's verbose checkpoint lines.

Each single step below is worked by hand from sofia-ml's rules (sofia-ml-methods.cc:
SingleMarginPerceptronRankStep, GetEta, L2Regularize, PegasosProjection).
"""

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.estimators.registry import make_solver
from rankbench.estimators.spd import SPDRanker
from rankbench.optim.pair_steps import ETA_SCHEDULES, LEARNERS, pair_step_dense, pair_step_sparse
from rankbench.optim.samplers import build_pair_index, draw_pairs


def step(kind, learner, w, xa, xb, ya, yb, t, lam, C, eta="pegasos", eta_c=10.0):
    scale = 0.5
    v = np.asarray(w, float) / scale
    vsq = float(v @ v)
    X = np.array([xa, xb], float)
    yab = 1.0 if ya > yb else -1.0
    args = (yab, t, LEARNERS[learner], lam, C, ETA_SCHEDULES[eta], eta_c)
    if kind == "dense":
        scale, vsq, added = pair_step_dense(X, 0, 1, *args, v, scale, vsq)
    else:
        Xs = sp.csr_matrix(X)
        scale, vsq, added = pair_step_sparse(Xs.data, Xs.indices, Xs.indptr, 0, 1, *args, v,
                                             scale, vsq)
    return scale * v, added


# (learner, w, xa, xb, ya, yb, t, lam, C, eta, eta_c, expected w, updated)
CASES = [
    # perceptron from w = 0: y <w, x> = 0 <= 0 updates; eta = 1/(lam t) = 1/(0.5 * 1) = 2;
    # x = a - b = (1, 1): w = 2 (1, 1)
    ("perceptron", [0, 0], [1, 2], [0, 1], 1, 0, 1, 0.5, 0.0, "pegasos", 10.0, [2, 2], True),
    # perceptron, margin y <w, x> = 1 > 0: no update
    ("perceptron", [1, 0], [1, 2], [0, 1], 1, 0, 3, 0.5, 0.0, "basic", 10.0, [1, 0], False),
    # margin perceptron, margin 1: 1 <= 1 updates; basic eta = 10/(10 + 3) = 10/13:
    # w = (1, 0) + 10/13 (1, 1) = (23/13, 10/13); no shrink (perceptrons do not regularise)
    ("margin_perceptron", [1, 0], [1, 2], [0, 1], 1, 0, 3, 0.5, 1.0, "basic", 10.0,
     [23 / 13, 10 / 13], True),
    # margin perceptron, a preferred less (y = -1): y <w, x> = -0.5 <= 1; constant eta 0.02:
    # w = (0.5, 0) - 0.02 (1, 1) = (0.48, -0.02)
    ("margin_perceptron", [0.5, 0], [1, 2], [0, 1], 0, 1, 7, 0.5, 1.0, "constant", 0.02,
     [0.48, -0.02], True),
    # margin perceptron with margin 0.4: y <w, x> = 0.5 > 0.4: no update
    ("margin_perceptron", [0.5, 0], [1, 2], [0, 1], 1, 0, 7, 0.5, 0.4, "constant", 0.02,
     [0.5, 0], False),
    # Pegasos with basic eta: t = 2, c = 10: eta = 10/12; margin (0.3 + 0.2) = 0.5 < 1;
    # shrink 1 - eta lam = 1 - 1/12 = 11/12; w = 11/12 (0.3, -0.2) + 10/12 (1, -1)
    # = (1.10833.., -1.01666..); |w| = 1.504 < 1/sqrt(0.1): no projection
    ("pegasos", [0.3, -0.2], [1, 0], [0, 1], 2, 1, 2, 0.1, 1.0, "basic", 10.0,
     [11 / 12 * 0.3 + 10 / 12, -11 / 12 * 0.2 - 10 / 12], True),
    # Pegasos with constant eta 0.5, lam 1: shrink 0.5; margin 0.5 < 1:
    # w = 0.5 (0.3, -0.2) + 0.5 (1, -1) = (0.65, -0.6); |w| = 0.8846 < 1/sqrt(1): kept
    ("pegasos", [0.3, -0.2], [1, 0], [0, 1], 2, 1, 9, 1.0, 1.0, "constant", 0.5,
     [0.65, -0.6], True),
    # SGD-SVM, constant eta 0.02 with lam 100: 1 - eta lam = -1 is clamped to sofia-ml's
    # MIN_SCALING_FACTOR 1e-7; margin 1 is not < 1: no step: w = 1e-7 (1, 1)
    ("sgd_svm", [1, 1], [1, 0], [0, 0], 1, 0, 5, 100.0, 1.0, "constant", 0.02,
     [1e-7, 1e-7], False),
]


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_single_step_hand_worked(kind, case):
    learner, w, xa, xb, ya, yb, t, lam, C, eta, eta_c, expect, updated = CASES[case]
    got, added = step(kind, learner, w, xa, xb, ya, yb, t, lam, C, eta, eta_c)
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-15)
    assert bool(added) == updated


def _problem(seed=2):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 15, size=6)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    y = np.digitize(X @ [1.0, -0.5, 0.2, 0.0] + rng.normal(size=n), [-0.5, 0.7])
    qid = np.repeat(np.arange(6), sizes)
    o = np.lexsort(tuple(X.T[::-1]) + (y, qid))  # already canonical: positions are stable
    return X[o], y[o], qid[o]


@pytest.mark.parametrize("learner,eta,eta_c,margin", [
    ("perceptron", "pegasos", None, 1.0), ("perceptron", "basic", None, 1.0),
    ("margin_perceptron", "basic", 3.0, 0.5), ("margin_perceptron", "constant", None, 1.0),
    ("pegasos", "basic", None, 1.0), ("sgd_svm", "constant", 0.01, 1.0),
])
def test_whole_run_equals_sofia_loop(learner, eta, eta_c, margin):
    """A run equals a plain loop of sofia-ml's rules over the same drawn pairs."""
    X, y, qid = _problem()
    n_iter, lam = 2000, 0.05
    model = SPDRanker(learner=learner, lam=lam, n_iter=n_iter, eta=eta, eta_c=eta_c,
                      margin=margin, random_state=5).fit(X, y, qid)
    ptr = np.array([0, *np.flatnonzero(np.diff(qid)) + 1, len(y)])
    a, b, _ = draw_pairs(build_pair_index(y, ptr), "indexed", n_iter, 5)
    c = {"basic": 10.0, "constant": 0.02}.get(eta) if eta_c is None else eta_c
    w = np.zeros(X.shape[1])
    for t in range(1, n_iter + 1):
        x = X[a[t - 1]] - X[b[t - 1]]
        yy = 1.0 if y[a[t - 1]] > y[b[t - 1]] else -1.0
        e = {"pegasos": 1.0 / (lam * t), "basic": c / (c + t) if c else 0, "constant": c}[eta]
        m = yy * (w @ x)
        if learner in ("perceptron", "margin_perceptron"):
            if m <= (0.0 if learner == "perceptron" else margin):
                w = w + e * yy * x
            continue
        shrink = max(1.0 - e * lam, 1e-7) if 1.0 - e * lam != 0 else 0.0
        w = shrink * w + (e * yy * x if m < 1 else 0.0)
        if learner == "pegasos":
            nrm = np.linalg.norm(w)
            if nrm > 1 / np.sqrt(lam):
                w = w / (nrm * np.sqrt(lam))
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-9 * np.abs(w).max())


def test_perceptron_solvers_are_registered_and_configs_load():
    from pathlib import Path

    from omegaconf import OmegaConf

    conf = Path(__file__).resolve().parents[1] / "conf" / "solver"
    for learner in ("perceptron", "margin_perceptron"):
        model = make_solver(f"spd_{learner}", {"lam": 0.1, "n_iter": 10})
        assert isinstance(model, SPDRanker) and model.learner == learner
        cfg = OmegaConf.load(conf / f"spd_{learner}.yaml")
        assert cfg.name == f"spd_{learner}"
        assert "base/spd@_here_" in cfg.defaults


@pytest.mark.parametrize("params,message", [
    ({"eta": "fast"}, "unknown eta schedule"),
    ({"learner": "pa1", "eta": "basic"}, "chooses its own step"),
    ({"eta_c": 5.0}, "eta_c"),
    ({"eta": "basic", "eta_c": -1.0}, "eta_c"),
    ({"learner": "margin_perceptron", "margin": -0.1}, "margin"),
])
def test_bad_step_parameters_are_refused(params, message):
    X, y, qid = _problem()
    with pytest.raises(ValueError, match=message):
        SPDRanker(n_iter=10, **params).fit(X, y, qid)


def test_verbose_logs_one_line_per_checkpoint(caplog):
    X, y, qid = _problem()
    logging.getLogger("rankbench").addHandler(logging.NullHandler())
    with caplog.at_level(logging.INFO, logger="rankbench.estimators.spd"):
        SPDRanker(n_iter=1000, checkpoints=[10, 100], verbose=True,
                  eval_set=(X, y, qid)).fit(X, y, qid)
    lines = [r.getMessage() for r in caplog.records if r.name == "rankbench.estimators.spd"]
    assert len(lines) == 3
    assert lines[0].startswith("spd_pegasos: iter 10/1000 objective=")
    assert "eval_map=" in lines[-1] and "iter 1000/1000" in lines[-1]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rankbench.estimators.spd"):
        SPDRanker(n_iter=100).fit(X, y, qid)
    assert not caplog.records


def test_verbose_without_logging_configured_goes_to_stderr(capfd):
    X, y, qid = _problem()
    SPDRanker(n_iter=100, verbose=True).fit(X, y, qid)
    err = capfd.readouterr().err
    assert "[rankbench.estimators.spd] spd_pegasos: 100 steps" in err
