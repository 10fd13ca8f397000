"""newton_cg's warm-start options (forcing="origin", resume_confirm, probe_certificate) against
the default algorithm: from w = 0 they change no iterate, from a warm start the stopping rule
and its accuracy stay the cold fit's; a resumed CG run is bit for bit one longer run."""

from dataclasses import replace

import numpy as np
import pytest

import rankbench.optim.newton_cg as nc
from rankbench.data.ranking_data import RankingData
from rankbench.data.synthetic import make_letor_like
from rankbench.objective import make_oracle
from rankbench.optim.accuracy import certificate
from rankbench.optim.newton_cg import COLD, WARM, CGState, cg_run, conjugate_gradient, newton_cg

DECREMENT_STOP = "Newton decrement / objective < tol"


@pytest.fixture(scope="module")
def toy():
    d = make_letor_like(n_queries=60, docs_per_query=30, n_features=15, seed=1)
    return RankingData.from_arrays(d.X, d.y, d.qid)


@pytest.fixture
def confirm_path(monkeypatch):
    """The candidate stop's confirming solve, which these options change: the certified bound
    (prered + ||r||^2/2) settles most stops from the loose solve alone, so it is switched off
    here to reach the confirm path on the toy; test_the_bound_settles_the_stop_without_a_confirm
    covers the default."""
    monkeypatch.setattr(nc, "decrement_bound", lambda prered, r: np.inf)


def _oracle(data, C):
    return make_oracle("counting", data.X, data.y, data.query_ptr, C=C)


@pytest.mark.parametrize("precond", [False, True])
def test_resumed_cg_is_one_run_bit_for_bit(precond):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((40, 40)) * np.logspace(0, 2, 40)
    H = np.eye(40) + A.T @ A / 40
    b = rng.standard_normal(40)
    M = np.diag(H).copy() if precond else None
    loose = cg_run(CGState(b, M), lambda v: H @ v, 0.1, 500)
    k_loose = loose.it
    resumed = cg_run(loose, lambda v: H @ v, 1e-10, 500)
    x, k = conjugate_gradient(lambda v: H @ v, b, 1e-10, 500, M)
    assert 0 < k_loose < k
    assert resumed.it == k
    np.testing.assert_array_equal(resumed.x, x)
    np.testing.assert_allclose(x, np.linalg.solve(H, b), rtol=1e-7, atol=1e-9)


def _ill_conditioned(d=45, cond=1e6, seed=5):
    """SPD H = Q diag(1 .. cond) Q^T (log-spaced spectrum) and a right-hand side."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    H = (Q * np.logspace(0, np.log10(cond), d)) @ Q.T
    return 0.5 * (H + H.T), rng.standard_normal(d)


@pytest.mark.parametrize("precond", [False, True])
def test_reorthogonalized_cg_takes_at_most_d_steps(precond):
    H, b = _ill_conditioned()
    d = b.size
    M = np.diag(H).copy() if precond else None
    x_ref = np.linalg.solve(H, b)
    plain = cg_run(CGState(b, M), lambda v: H @ v, 1e-8, 2000)
    reo = cg_run(CGState(b, M, reorth=True), lambda v: H @ v, 1e-8, 2000)
    # exact-arithmetic CG ends within d steps; plain CG in floating point needs more
    assert reo.it <= d < plain.it
    for st in (plain, reo):
        np.testing.assert_allclose(st.x, x_ref, rtol=0, atol=1e-6 * np.abs(x_ref).max())
    # the kept residuals are M^-1-orthonormal
    U, V = reo.U[: reo.nb], reo.V[: reo.nb]
    np.testing.assert_allclose(V @ U.T, np.eye(reo.nb), atol=1e-8)
    # resumed from a looser tolerance: one run, bit for bit
    loose = cg_run(CGState(b, M, reorth=True), lambda v: H @ v, 0.1, 2000)
    assert 0 < loose.it < reo.it
    resumed = cg_run(loose, lambda v: H @ v, 1e-8, 2000)
    assert resumed.it == reo.it
    np.testing.assert_array_equal(resumed.x, reo.x)


def test_reorthogonalization_memory_is_capped(monkeypatch):
    H, b = _ill_conditioned()
    monkeypatch.setattr(nc, "REORTH_MAX_BYTES", 10 * b.size * 8)
    st = cg_run(CGState(b, None, reorth=True), lambda v: H @ v, 1e-8, 2000)
    assert st.U.shape == (10, b.size) and st.nb == 10
    np.testing.assert_allclose(H @ st.x, b, atol=1e-7 * np.linalg.norm(b))
    monkeypatch.setattr(nc, "REORTH_MAX_BYTES", b.size * 8 - 1)  # not one vector: plain CG
    assert CGState(b, None, reorth=True).U is None


def test_the_bound_settles_the_stop_without_a_confirm(toy, monkeypatch):
    # the default: C = 10's cold fit stops on the certified bound, no second CG solve to 1e-4
    seen = _cg_tolerances(monkeypatch)
    r = newton_cg(_oracle(toy, 10.0))
    assert r.message == DECREMENT_STOP and r.converged
    assert not any(rtol == 1e-4 for rtol, _ in seen)
    ref = newton_cg(_oracle(toy, 10.0), tol=1e-14, max_iter=500).f
    assert r.f - ref <= 1e-6 * abs(ref)
    assert r.accuracy["relative_decrement"] <= 1e-6


def test_options_from_zero_keep_the_iterates(toy, confirm_path):
    # C = 10: the cold fit stops by a confirmed Newton decrement (a second CG solve to 1e-4)
    base = newton_cg(_oracle(toy, 10.0))
    assert base.message == DECREMENT_STOP
    origin = newton_cg(_oracle(toy, 10.0), warm=replace(COLD, forcing="origin"))
    resumed = newton_cg(_oracle(toy, 10.0), warm=replace(COLD, resume_confirm=True))
    for r in (origin, resumed):
        np.testing.assert_array_equal(r.w, base.w)
        assert r.f == base.f and r.n_iter == base.n_iter and r.message == base.message
    assert origin.n_cg_iter == base.n_cg_iter  # "origin" from w = 0 is the paper's rule
    assert resumed.n_cg_iter < base.n_cg_iter  # the confirming solve skips the loose run's steps


def _cg_tolerances(monkeypatch):
    seen = []
    run = nc.cg_run

    def spy(state, hess_vec, rtol, max_iter):
        seen.append((float(rtol), state.it))
        return run(state, hess_vec, rtol, max_iter)

    monkeypatch.setattr(nc, "cg_run", spy)
    return seen


def test_origin_forcing_is_the_cold_fits_at_the_same_gradient(toy, monkeypatch):
    w_prev = newton_cg(_oracle(toy, 0.1)).w
    seen = _cg_tolerances(monkeypatch)
    r = newton_cg(_oracle(toy, 1.0), w0=w_prev, keep_coef=True, warm=replace(COLD, forcing="origin"))
    # one CG run per Newton step, besides the confirming solve (1e-4) of a candidate stop
    fresh = [rtol for rtol, it in seen if it == 0 and rtol != 1e-4]
    assert len(fresh) == r.n_iter >= 2
    o = _oracle(toy, 1.0)
    o.fun(np.zeros(toy.n_features))
    g_origin = np.linalg.norm(o.grad(np.zeros(toy.n_features)))
    assert fresh[0] == 0.1
    for k in range(1, r.n_iter):
        o.fun(r.history[k]["coef"])
        g_k = np.linalg.norm(o.grad(r.history[k]["coef"]))
        assert fresh[k] == pytest.approx(min(0.1, np.sqrt(g_k / g_origin)), rel=1e-12)
    # the paper's rule measures the gradient against the start's: 0.1 on this warm start
    seen.clear()
    newton_cg(_oracle(toy, 1.0), w0=w_prev)
    assert {rtol for rtol, it in seen if it == 0 and rtol != 1e-4} == {0.1}


@pytest.mark.parametrize("C", [1.0, 10.0, 100.0])
def test_warm_options_keep_the_certified_accuracy(toy, C):
    tol = 1e-6
    ref = newton_cg(_oracle(toy, C), tol=1e-14, max_iter=500).f
    w_prev = newton_cg(_oracle(toy, C / 10)).w
    for w0 in (None, w_prev):
        r = newton_cg(_oracle(toy, C), w0=w0, tol=tol, warm=WARM)
        assert r.converged
        assert r.f - ref <= tol * abs(ref), (C, w0 is None, r.f, ref)
        if r.message == DECREMENT_STOP:
            assert r.accuracy["relative_decrement"] <= tol
        else:
            assert certificate(_grad(toy, C, r.w)) <= tol * abs(r.f)


def _grad(data, C, w):
    o = _oracle(data, C)
    o.fun(w)
    return o.grad(w)


def test_probe_stops_at_the_loose_step_when_its_certificate_holds(toy, monkeypatch, confirm_path):
    # warm start at C = 1 from C = 0.1: without the probe the candidate stop is confirmed by a
    # second CG solve to 1e-4; with it, the loose step's certificate ends the fit
    w_prev = newton_cg(_oracle(toy, 0.1)).w
    seen = _cg_tolerances(monkeypatch)
    plain = newton_cg(_oracle(toy, 1.0), w0=w_prev, warm=replace(COLD, forcing="origin"))
    assert any(rtol == 1e-4 for rtol, _ in seen)
    seen.clear()
    probed = newton_cg(_oracle(toy, 1.0), w0=w_prev, warm=replace(COLD, forcing="origin", probe_certificate=True))
    assert not any(rtol == 1e-4 for rtol, _ in seen)
    assert probed.message.startswith("||g||^2/2")
    assert certificate(_grad(toy, 1.0, probed.w)) <= 1e-6 * abs(probed.f)
    assert probed.n_cg_iter < plain.n_cg_iter
    assert abs(probed.f - plain.f) <= 1e-6 * abs(plain.f)


def test_grad_origin_given_is_the_evaluated_one(toy):
    # ||grad f_C(0)|| = C ||grad L(0)||: scaled from the start of a fit at another C
    g01 = newton_cg(_oracle(toy, 0.1)).history[0]["grad_norm"]
    w_prev = newton_cg(_oracle(toy, 1.0)).w
    evaluated = newton_cg(_oracle(toy, 10.0), w0=w_prev, warm=replace(COLD, forcing="origin"))
    given = newton_cg(_oracle(toy, 10.0), w0=w_prev, warm=replace(COLD, forcing="origin", grad_origin=g01 * 100.0))
    assert given.n_cg_iter == evaluated.n_cg_iter and given.n_iter == evaluated.n_iter
    assert given.f == pytest.approx(evaluated.f, rel=1e-13)


def test_warm_start_policy_is_one_object():
    # ranksvm_path's policy: every part on; the cold algorithm: every part off
    assert (WARM.forcing, WARM.resume_confirm, WARM.probe_certificate, WARM.cg_reorth) == (
        "origin", True, True, True)
    assert (COLD.forcing, COLD.resume_confirm, COLD.probe_certificate, COLD.cg_reorth) == (
        "start", False, False, False)


def test_bad_forcing_is_refused(toy):
    with pytest.raises(ValueError, match="forcing must be 'start' or 'origin'"):
        newton_cg(_oracle(toy, 1.0), warm=replace(COLD, forcing="gradient"))
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="grad_origin must be a finite norm"):
            newton_cg(_oracle(toy, 1.0), warm=replace(COLD, forcing="origin", grad_origin=bad))
