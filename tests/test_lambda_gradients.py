"""Lambda-gradients: Delta-metric formulas against brute-force swaps, gradients against a per-pair reference."""

import math

import numpy as np
import pytest

from rankbench.boosting.lambdas import delta_matrix, lambda_gradients
from rankbench.boosting.query_metrics import per_query_metric

# ---- brute-force metrics (plain Python, O(n^2), no shared code with the kernels) ----------


def bf_auc(s, pos):
    """Fraction of (positive, negative) pairs ordered correctly, ties 1/2; None if undefined."""
    P = [i for i in range(len(s)) if pos[i]]
    N = [i for i in range(len(s)) if not pos[i]]
    if not P or not N:
        return None
    c = sum(1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0 for i in P for j in N)
    return c / (len(P) * len(N))


def bf_mauc(s, y):
    """Welleck eq. 5: sum over defined classes c >= 1 of P_c / R * AUC(c vs rest)."""
    tot, rel = 0.0, 0
    for c in sorted(set(int(v) for v in y)):
        if c == 0:
            continue
        a = bf_auc(s, [v == c for v in y])
        if a is not None:
            pc = sum(1 for v in y if v == c)
            tot += pc * a
            rel += pc
    return tot / rel if rel else None


def bf_dcg(s, y, k=None):
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    top = order if k is None else order[:k]
    return sum((2.0 ** y[d] - 1) / math.log2(2 + r) for r, d in enumerate(top))


def bf_idcg(y, k):
    ys = sorted(y, reverse=True)[:k]
    return sum((2.0 ** v - 1) / math.log2(2 + r) for r, v in enumerate(ys))


def swapped(s, a, b):
    t = list(s)
    t[a], t[b] = t[b], t[a]
    return t


def bf_delta(metric, s, y, a, b, k=10, mauc_delta="exact", ndcg_delta="lightgbm"):
    """|Z(after swapping a, b) - Z(before)| by recomputation."""
    t = swapped(s, a, b)
    if metric == "auc":
        pos = [v > 0 for v in y]
        if bf_auc(s, pos) is None:
            return 0.0  # AUC undefined for this query: no gradient
        return abs(bf_auc(t, pos) - bf_auc(s, pos))
    if metric == "mauc":
        if mauc_delta == "exact":
            return abs(bf_mauc(t, y) - bf_mauc(s, y))
        # sum over classes of p(c) |Delta AUC_c|
        rel = sum(sum(1 for v in y if v == c) for c in set(y) if c > 0 and bf_auc(s, [v == c for v in y]) is not None)
        out = 0.0
        for c in set(y):
            pos = [v == c for v in y]
            if c > 0 and bf_auc(s, pos) is not None:
                out += sum(pos) / rel * abs(bf_auc(t, pos) - bf_auc(s, pos))
        return out
    if ndcg_delta == "exact":  # the change of NDCG@k itself
        return abs(bf_dcg(t, y, k) - bf_dcg(s, y, k)) / bf_idcg(y, k)
    # LightGBM's Delta NDCG: change of the full-list DCG over the ideal DCG@k
    return abs(bf_dcg(t, y) - bf_dcg(s, y)) / bf_idcg(y, k)


def random_query(rng, n, levels):
    y = rng.integers(0, levels, size=n)
    s = rng.permutation(n).astype(float) + rng.normal(0, 0.1, n)  # distinct scores
    return s, y


@pytest.mark.parametrize("metric", ["auc", "mauc", "ndcg", "ndcg_exact"])
@pytest.mark.parametrize("levels", [2, 3, 5])
def test_delta_matrix_matches_brute_force_swaps(metric, levels):
    metric, ndcg_delta = ("ndcg", "exact") if metric == "ndcg_exact" else (metric, "lightgbm")
    rng = np.random.default_rng(100 + levels)
    checked = 0
    for _ in range(25):
        n = int(rng.integers(2, 16))
        s, y = random_query(rng, n, levels)
        if len(set(y)) < 2:
            continue
        k = int(rng.integers(1, 8))
        D = delta_matrix(s, y, metric, k=k, ndcg_delta=ndcg_delta)
        pos = np.empty(n, int)
        pos[np.argsort(-s, kind="stable")] = np.arange(n)
        for a in range(n):
            for b in range(n):
                if y[a] <= y[b]:
                    assert D[a, b] == D[b, a]
                    if y[a] == y[b]:
                        assert D[a, b] == 0.0
                    continue
                if metric == "ndcg" and min(pos[a], pos[b]) >= k:
                    assert D[a, b] == 0.0  # truncated: neither in the top k
                    continue
                ref = bf_delta(metric, list(s), list(y), a, b, k=k, ndcg_delta=ndcg_delta)
                assert D[a, b] == pytest.approx(ref, rel=1e-12, abs=1e-14)
                checked += 1
    assert checked > 100


def test_mauc_sum_abs_reading_matches_per_class_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(20):
        s, y = random_query(rng, int(rng.integers(3, 14)), 4)
        if len(set(y)) < 2:
            continue
        D = delta_matrix(s, y, "mauc", mauc_delta="sum_abs")
        for a in range(len(s)):
            for b in range(len(s)):
                if y[a] > y[b]:
                    ref = bf_delta("mauc", list(s), list(y), a, b, mauc_delta="sum_abs")
                    assert D[a, b] == pytest.approx(ref, rel=1e-12, abs=1e-14)


def test_ndcg_deltas_differ_only_across_the_cut():
    s = np.arange(8.0)[::-1]
    y = np.array([0, 2, 0, 1, 0, 0, 2, 0])
    lgb = delta_matrix(s, y, "ndcg", k=3)
    ex = delta_matrix(s, y, "ndcg", k=3, ndcg_delta="exact")
    idcg = 3 / 1 + 3 / np.log2(3) + 1 / np.log2(4)
    # both in the top 3: same value; (pos 1, pos 6) crosses the cut: exact keeps D(1) only
    assert ex[1, 0] == lgb[1, 0] == pytest.approx(3 * (1 - 1 / np.log2(3)) / idcg)
    assert ex[1, 7] == pytest.approx(3 / np.log2(3) / idcg)
    assert lgb[1, 7] == pytest.approx(3 * (1 / np.log2(3) - 1 / np.log2(9)) / idcg)
    assert ex[6, 0] == pytest.approx(3 / idcg) and ex[3, 4] == 0.0


def test_theorem_4_1_hand_example():
    # ranking by score: + - - + -  (P=2, N=3); swap ranks 0 and 2 (a positive and a negative)
    s = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    y = np.array([1, 0, 0, 1, 0])
    D = delta_matrix(s, y, "auc")
    assert D[0, 2] == pytest.approx(2 / 6)
    assert D[3, 4] == pytest.approx(1 / 6)
    assert D[0, 3] == 0.0  # both positive
    # MAUC with classes 0/1/2: a class-2 doc above a class-1 doc; swapping helps AUC_1 and hurts AUC_2
    y3 = np.array([2, 1, 0, 1, 0])  # P1=2 (N1=3), P2=1 (N2=4), R=3
    D3 = delta_matrix(s, y3, "mauc")
    assert D3[0, 1] == pytest.approx(1 * abs(1 / (3 * 3) - 1 / (3 * 4)))
    assert D3[0, 2] == pytest.approx(2 / (3 * 4))  # (2, 0) pair: only AUC_2 moves


def ref_lambdas(s, y, ptr, metric, k, sigma, norm, ndcg_delta="lightgbm"):
    """Plain-Python per-pair lambdas with brute-force deltas (LightGBM's lambdarank loop)."""
    g = np.zeros(len(s))
    h = np.zeros(len(s))
    for q in range(len(ptr) - 1):
        a0, b0 = ptr[q], ptr[q + 1]
        sq, yq = list(s[a0:b0]), [int(v) for v in y[a0:b0]]
        n = len(sq)
        if n < 2 or len(set(yq)) < 2:
            continue
        order = sorted(range(n), key=lambda i: (-sq[i], i))
        # the swap is one of positions in the ranking (ties broken by document order)
        rank_score = [0.0] * n
        for r, d in enumerate(order):
            rank_score[d] = float(n - r)
        scaled = norm and sq[order[0]] != sq[order[-1]]
        qg, qh, total = np.zeros(n), np.zeros(n), 0.0
        top = min(n - 1, k) if metric == "ndcg" else n - 1
        for i in range(top):
            for j in range(i + 1, n):
                u, v = order[i], order[j]
                if yq[u] == yq[v]:
                    continue
                hi, lo = (u, v) if yq[u] > yq[v] else (v, u)
                dz = bf_delta(metric, rank_score, yq, hi, lo, k=k, ndcg_delta=ndcg_delta)
                if dz == 0.0:
                    continue
                ds = sq[hi] - sq[lo]
                if scaled:
                    dz /= float(np.float32(0.01)) + abs(ds)
                rho = 1.0 / (1.0 + math.exp(sigma * ds))
                lam = -sigma * rho * dz
                qg[hi] += lam
                qg[lo] -= lam
                qh[hi] += sigma**2 * rho * (1 - rho) * dz
                qh[lo] += sigma**2 * rho * (1 - rho) * dz
                total -= 2 * lam
        if norm and total > 0:
            f = math.log2(1 + total) / total
            qg *= f
            qh *= f
        g[a0:b0], h[a0:b0] = qg, qh
    return g, h


@pytest.mark.parametrize("metric", ["auc", "mauc", "ndcg", "ndcg_exact"])
@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_gradients_match_per_pair_reference(metric, norm, sigma):
    metric, ndcg_delta = ("ndcg", "exact") if metric == "ndcg_exact" else (metric, "lightgbm")
    rng = np.random.default_rng(11)
    sizes = [1, 2, 7, 12, 5, 9, 4]
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    y = rng.integers(0, 3, size=ptr[-1])
    y[ptr[3]:ptr[4]] = 1  # a single-level query: no pairs
    s = rng.normal(size=ptr[-1])
    s[ptr[5]:ptr[6]] = 0.3  # all scores tied within one query
    s[ptr[2] + 1] = s[ptr[2] + 3]  # a tie inside another
    g, h = lambda_gradients(s, y, ptr, metric, k=4, sigma=sigma, norm=norm, ndcg_delta=ndcg_delta)
    rg, rh = ref_lambdas(s, y, ptr, metric, 4, sigma, norm, ndcg_delta)
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)
    assert np.all(g[ptr[3]:ptr[4]] == 0) and np.all(h[ptr[3]:ptr[4]] == 0)
    assert g[0] == 0.0  # one-document query
    assert np.any(g != 0)
    # gradient is a pairwise push: it sums to zero within each query
    for q in range(len(sizes)):
        assert abs(g[ptr[q]:ptr[q + 1]].sum()) < 1e-12


def test_gradient_descends_the_metric():
    """A small step along -grad improves the target metric of a badly ranked query."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, size=30)
    s = -y + rng.normal(0, 0.5, 30)  # reversed ranking
    ptr = np.array([0, 30])
    for metric in ("auc", "mauc", "ndcg"):
        g, _ = lambda_gradients(s, y, ptr, metric, k=10, norm=False)
        before = per_query_metric(s, y, ptr, metric)[0]
        after = per_query_metric(s - 3.0 * g / np.abs(g).max(), y, ptr, metric)[0]
        assert after > before, metric


def test_bad_inputs_raise_clear_errors():
    s, y, ptr = np.zeros(3), np.array([0, 1, 2]), np.array([0, 3])
    with pytest.raises(ValueError, match="metric"):
        lambda_gradients(s, y, ptr, "map")
    with pytest.raises(ValueError, match="sigma"):
        lambda_gradients(s, y, ptr, "auc", sigma=0.0)
    with pytest.raises(ValueError, match="mauc_delta"):
        lambda_gradients(s, y, ptr, "mauc", mauc_delta="abs")
    with pytest.raises(ValueError, match="ndcg_delta"):
        lambda_gradients(s, y, ptr, "ndcg", ndcg_delta="truncated")
    with pytest.raises(ValueError, match="query_ptr"):
        lambda_gradients(s, y, np.array([0, 2]), "auc")
    with pytest.raises(ValueError, match="NaN"):
        lambda_gradients(np.array([0.0, np.nan, 1.0]), y, ptr, "auc")
    with pytest.raises(ValueError, match=">= 0"):
        lambda_gradients(s, np.array([0, -1, 2]), ptr, "auc")


# ---- the per-query eval metrics used during boosting ----------------------------------------


def test_query_metrics_match_brute_force_with_ties():
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 14, size=40)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    y = rng.integers(0, 3, size=ptr[-1])
    s = np.round(rng.normal(size=ptr[-1]), 1)  # many ties
    got = {m: per_query_metric(s, y, ptr, m, k=5) for m in ("auc", "mauc", "ndcg", "auc_c2")}
    for q in range(len(sizes)):
        sq, yq = list(s[ptr[q]:ptr[q + 1]]), [int(v) for v in y[ptr[q]:ptr[q + 1]]]
        refs = {
            "auc": bf_auc(sq, [v > 0 for v in yq]),
            "auc_c2": bf_auc(sq, [v == 2 for v in yq]),
            "mauc": bf_mauc(sq, yq),
            "ndcg": bf_dcg(sq, yq, 5) / bf_idcg(yq, 5) if bf_idcg(yq, 5) > 0 else None,
        }
        for m, ref in refs.items():
            if ref is None:
                assert np.isnan(got[m][q]), (m, q)
            else:
                assert got[m][q] == pytest.approx(ref, abs=1e-12), (m, q)


def test_query_metrics_agree_with_rankbench_metrics():
    metrics = pytest.importorskip("rankbench.metrics")
    rng = np.random.default_rng(9)
    sizes = rng.integers(2, 20, size=30)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    qid = np.repeat(np.arange(30), sizes)
    y = rng.integers(0, 3, size=ptr[-1])
    s = rng.normal(size=ptr[-1])
    ours = per_query_metric(s, y, ptr, "mauc")
    theirs = metrics.mauc(y, s, qid, per_query=True)
    ok = ~np.isnan(ours)
    np.testing.assert_allclose(ours[ok], np.asarray(theirs, float)[ok], atol=1e-12)
    ours = per_query_metric(s, y, ptr, "auc")
    theirs = metrics.auc(y, s, qid, per_query=True)
    ok = ~np.isnan(ours)
    np.testing.assert_allclose(ours[ok], np.asarray(theirs, float)[ok], atol=1e-12)


def test_gradients_do_not_depend_on_thread_count():
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    rng = np.random.default_rng(13)
    sizes = rng.integers(1, 40, size=200)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    y = rng.integers(0, 3, size=ptr[-1])
    s = rng.normal(size=ptr[-1])
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        g1, h1 = lambda_gradients(s, y, ptr, "mauc")
        numba.set_num_threads(2)
        g2, h2 = lambda_gradients(s, y, ptr, "mauc")
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 16, 17, 33, 64, 65, 200])
def test_stable_order_is_mergesort_argsort(n):
    """Our allocation-free merge sort gives numpy's stable order (ties, signed zeros, sorted and
    reversed input, run lengths around the 8-element insertion-sorted runs)."""
    from rankbench.boosting.lambdas import _stable_order_desc

    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    for s in (x, np.sort(x), -np.sort(x), rng.integers(-2, 3, size=n).astype(float),
              np.where(rng.random(n) < 0.5, 0.0, -0.0)):
        order = np.full(n, -1, dtype=np.int64)
        _stable_order_desc(s, order, np.empty(n, dtype=np.int64))
        np.testing.assert_array_equal(order, np.argsort(-s, kind="mergesort"))


@pytest.mark.parametrize("metric", ["auc", "mauc", "ndcg"])
def test_long_query_gradients_match_per_pair_reference(metric):
    """A 90-document query (several merge passes) against the per-pair reference."""
    rng = np.random.default_rng(5)
    ptr = np.array([0, 90, 97])
    y = rng.integers(0, 3, size=97)
    s = np.round(rng.normal(size=97), 1)  # many ties
    g, h = lambda_gradients(s, y, ptr, metric, k=10)
    rg, rh = ref_lambdas(s, y, ptr, metric, 10, 1.0, True, "lightgbm")
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)


def test_lightgbm_hook_gives_lambda_gradients_every_round():
    """The custom-objective hook (kernel straight into reused buffers) returns exactly lambda_gradients."""
    from rankbench.boosting.lightgbm_hook import LambdaObjective

    rng = np.random.default_rng(8)
    sizes = rng.integers(1, 30, size=40)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    y = rng.integers(0, 4, size=ptr[-1])
    for metric in ("ndcg", "auc", "mauc"):
        hook = LambdaObjective(y, ptr, metric, 5, 1.5, True, "sum_abs", "exact")
        for _ in range(3):
            s = rng.normal(size=ptr[-1])
            g, h = hook(s, None)
            eg, eh = lambda_gradients(s, y, ptr, metric, 5, 1.5, True, "sum_abs", "exact")
            np.testing.assert_array_equal(g, eg)
            np.testing.assert_array_equal(h, eh)
        assert hook.calls == 3
        with pytest.raises(ValueError, match="NaN or inf"):
            hook(np.full(ptr[-1], np.nan), None)
        with pytest.raises(ValueError, match="scores for"):
            hook(np.zeros(ptr[-1] + 1), None)
    with pytest.raises(ValueError, match="labels"):
        LambdaObjective(-np.ones(4, dtype=int), np.array([0, 4]), "auc", 5, 1.0, True, "exact")
