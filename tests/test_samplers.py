"""SPD pair samplers: the index against brute force, each sampler's distribution (chi-square)."""

import numpy as np
import pytest
from scipy.stats import chisquare

from rankbench.optim.samplers import (
    alias_table,
    build_pair_index,
    draw_pairs,
    pair_probabilities,
    seed_rng_state,
)

# Queries of different sizes and label mixes (one query with a single label, which has
# no pair): the indexed sampler is then far from uniform over P.
LABELS = [
    [0, 1, 2, 0, 0, 1, 0, 0],   # q0: 5 x 0, 2 x 1, 1 x 2
    [1, 1, 1],                  # q1: one label, no pair
    [0, 2],                     # q2: a single pair
    [0, 0, 0, 0, 0, 0, 1],      # q3: 6 pairs
    [2, 1, 0, 1, 2, 1],         # q4
]


def _problem():
    y = np.concatenate([np.array(q, dtype=np.int64) for q in LABELS])
    sizes = [len(q) for q in LABELS]
    query_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    qid = np.repeat(np.arange(len(LABELS)), sizes)
    return y, qid, query_ptr


def _brute_pairs(y, qid):
    """Every pair of P as (hi, lo) rows with y_hi > y_lo, by brute force."""
    return [(i, j) for i in range(len(y)) for j in range(len(y))
            if qid[i] == qid[j] and y[i] > y[j]]


def _indexed_probability(y, qid, i, j):
    """The paper's indexed sampler: P(query) P(label pair) P(doc | label) P(doc | label), both orders."""
    queries = [q for q in np.unique(qid) if len(np.unique(y[qid == q])) >= 2]
    labels = np.unique(y[qid == qid[i]])
    n_lab = len(labels)
    n_i = np.sum((qid == qid[i]) & (y == y[i]))
    n_j = np.sum((qid == qid[j]) & (y == y[j]))
    one_order = 1.0 / len(queries) / n_lab / (n_lab - 1) / n_i / n_j
    return 2 * one_order


def _observed(y, a, b, pairs):
    hi = np.where(y[a] > y[b], a, b)
    lo = np.where(y[a] > y[b], b, a)
    where = {p: k for k, p in enumerate(pairs)}
    counts = np.zeros(len(pairs))
    for h, l in zip(hi, lo, strict=True):
        counts[where[(int(h), int(l))]] += 1  # KeyError = a pair outside P
    return counts


def test_index_counts_pairs_like_brute_force():
    y, qid, qp = _problem()
    index = build_pair_index(y, qp)
    assert index.n_pairs == len(_brute_pairs(y, qid)) == 17 + 1 + 6 + 11  # q0: 5*2+5*1+2*1, q4: 2*3+2*1+3*1
    assert index.n_valid_queries == 4
    # Groups hold one label each and exactly the documents of that (query, label).
    for g in range(index.group_start.shape[0] - 1):
        rows = index.order[index.group_start[g]:index.group_start[g + 1]]
        assert np.all(y[rows] == index.group_label[g])
        assert len(np.unique(qid[rows])) == 1
    # Single-label query 1 (rows 8..10) is left out of the sampling index.
    assert not np.isin([8, 9, 10], index.order).any()


def test_no_valid_pair_is_a_value_error():
    with pytest.raises(ValueError, match="no valid pairs"):
        build_pair_index(np.array([1, 1, 0, 0]), np.array([0, 2, 4]))


def test_alias_table_reproduces_weights_exactly():
    w = np.array([6.0, 3.0, 2.0, 3.0, 1.0, 3.0, 0.5, 9.0])
    prob, alias = alias_table(w)
    m = len(w)
    effective = prob / m
    for j in range(m):
        effective[alias[j]] += (1.0 - prob[j]) / m
    np.testing.assert_allclose(effective, w / w.sum(), rtol=1e-12)


def test_uniform_sampler_hits_every_pair_with_frequency_one_over_P():
    y, qid, qp = _problem()
    pairs = _brute_pairs(y, qid)
    a, b, rejected = draw_pairs(build_pair_index(y, qp), "uniform", 300_000, random_state=3)
    assert rejected == 0
    counts = _observed(y, a, b, pairs)
    assert np.all(counts > 0)
    assert chisquare(counts, np.full(len(pairs), len(a) / len(pairs))).pvalue > 1e-3


def test_indexed_sampler_matches_its_documented_distribution():
    y, qid, qp = _problem()
    pairs = _brute_pairs(y, qid)
    expected = np.array([_indexed_probability(y, qid, i, j) for i, j in pairs])
    assert expected.sum() == pytest.approx(1.0)
    index = build_pair_index(y, qp)
    # The library's own table of pi agrees with the formula computed here.
    h, l, p = pair_probabilities(index, "indexed")
    table = {(int(i), int(j)): float(q) for i, j, q in zip(h, l, p, strict=True)}
    np.testing.assert_allclose([table[pr] for pr in pairs], expected, rtol=1e-12)
    a, b, _ = draw_pairs(index, "indexed", 300_000, random_state=4)
    counts = _observed(y, a, b, pairs)
    assert chisquare(counts, expected * len(a)).pvalue > 1e-3
    # And the same draws are clearly not uniform over P: the test has power.
    assert chisquare(counts, np.full(len(pairs), len(a) / len(pairs))).pvalue < 1e-12


def _sofia_probability(y, qid, i, j):
    """sofia-ml's rank loop: a uniform over documents of queries with a pair, then b uniform
    among a's query's documents with another label; both orders."""
    valid = [q for q in np.unique(qid) if len(np.unique(y[qid == q])) >= 2]
    n_valid = np.sum(np.isin(qid, valid))
    n_q = np.sum(qid == qid[i])
    others = lambda r: n_q - np.sum((qid == qid[r]) & (y == y[r]))  # noqa: E731
    return (1.0 / others(i) + 1.0 / others(j)) / n_valid


def test_sofia_sampler_matches_sofia_ml_rank_loop_distribution():
    y, qid, qp = _problem()
    pairs = _brute_pairs(y, qid)
    expected = np.array([_sofia_probability(y, qid, i, j) for i, j in pairs])
    assert expected.sum() == pytest.approx(1.0)
    index = build_pair_index(y, qp)
    h, l, p = pair_probabilities(index, "sofia")
    table = {(int(i), int(j)): float(q) for i, j, q in zip(h, l, p, strict=True)}
    np.testing.assert_allclose([table[pr] for pr in pairs], expected, rtol=1e-12)
    a, b, _ = draw_pairs(index, "sofia", 300_000, random_state=6)
    counts = _observed(y, a, b, pairs)
    assert chisquare(counts, expected * len(a)).pvalue > 1e-3
    indexed = np.array([_indexed_probability(y, qid, i, j) for i, j in pairs])
    assert chisquare(counts, indexed * len(a)).pvalue < 1e-12


def test_rejection_sampler_only_returns_valid_pairs_uniformly():
    y, qid, qp = _problem()
    pairs = _brute_pairs(y, qid)
    index = build_pair_index(y, qp)
    k = 200_000
    a, b, rejected = draw_pairs(index, "rejection", k, random_state=5)
    assert np.all(qid[a] == qid[b])
    assert np.all(y[a] != y[b])
    counts = _observed(y, a, b, pairs)
    assert chisquare(counts, np.full(len(pairs), k / len(pairs))).pvalue > 1e-3
    # Draws per accepted pair are geometric with success rate 2|P| / n^2.
    n = len(y)
    expected_rejected = k * (n * n / (2 * len(pairs)) - 1)
    sd = np.sqrt(k * (1 - 2 * len(pairs) / n**2)) * n * n / (2 * len(pairs))
    assert abs(rejected - expected_rejected) < 5 * sd


def test_same_seed_same_pairs_and_different_seed_different_pairs():
    y, _, qp = _problem()
    index = build_pair_index(y, qp)
    for sampler in ("indexed", "uniform", "rejection", "sofia"):
        a1, b1, _ = draw_pairs(index, sampler, 1000, random_state=11)
        a2, b2, _ = draw_pairs(index, sampler, 1000, random_state=11)
        a3, _, _ = draw_pairs(index, sampler, 1000, random_state=12)
        assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
        assert not np.array_equal(a1, a3)


def test_bad_sampler_and_seed_are_value_errors():
    y, _, qp = _problem()
    index = build_pair_index(y, qp)
    with pytest.raises(ValueError, match="unknown sampler 'weird'"):
        draw_pairs(index, "weird", 10)
    with pytest.raises(ValueError, match="random_state"):
        seed_rng_state(-1)
    with pytest.raises(ValueError, match="random_state"):
        seed_rng_state(np.random.default_rng(0))
