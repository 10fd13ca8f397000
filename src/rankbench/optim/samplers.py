"""Pair samplers for Stochastic Pairwise Descent (Sculley 2009, sect. 3.1) and their RNG.

A *candidate pair* is two documents of the same query with different labels; P is
the set of them (each unordered pair once; its preferred side is the higher label).
Every sampler returns row indices ``(a, b)`` of a pair of P, in either orientation:
the SPD step only uses ``y = sign(y_a - y_b)`` and ``x = a - b``, which is symmetric.
The samplers differ in the distribution over P, hence in the objective that SPD
really minimises, ``lambda/2 ||w||^2 + sum_{p in P} pi(p) hinge_p(w)``:

``uniform`` (SAMPLER_UNIFORM)
    pi(p) = 1/|P|: exactly the RankSVM objective of the paper's sect. 2
    (``lambda/2 ||w||^2 + 1/|P| sum_P hinge``), i.e. Chapelle eq. (1) at
    ``C = 1/(lambda |P|)``.  A block is a (query, higher label, lower label) cell;
    it is drawn with probability ``n_hi * n_lo / |P|`` from a Walker alias table
    (O(1) per draw), then one document of each side uniformly.  The paper omits
    this sampler ("the more general algorithm is omitted for lack of space").
``indexed`` (SAMPLER_INDEXED)
    The paper's constant-time index: a query uniformly among the queries with at
    least two distinct labels, two distinct labels of it uniformly, one document of
    each label uniformly.  For a pair p = (a, b) of query q with labels l != m,
    ``pi(p) = 2 / (|Q'| * L_q (L_q - 1) * n_{q,l} * n_{q,m})`` where Q' is the set
    of queries with at least two labels, L_q the number of distinct labels of q and
    n_{q,l} the number of documents of q with label l.  So every query weighs the
    same and, inside a query, every label pair weighs the same (Cao et al.'s query
    normalisation); it equals ``uniform`` only when those counts are all equal.
``sofia`` (SAMPLER_SOFIA)
    What sofia-ml's ``--loop_type rank`` code does (StochasticRankLoop), which differs
    from the paper's description: a document a uniformly among the documents of the
    queries with a pair, then b uniformly among the documents of a's query whose label
    differs from a's.  ``pi({a, b}) = (1/(n_q - n_{q,l}) + 1/(n_q - n_{q,m})) / n'``
    with n' the number of documents of those queries and n_q the size of query q:
    documents weigh the same, so large queries weigh more than under ``indexed``
    (sofia-ml also spends a step, without update, whenever a lands in a single-label
    query; here such documents are never drawn).
``rejection`` (SAMPLER_REJECTION)
    Two documents uniformly and independently from all n until they share a query
    and differ in label.  Each accepted ordered pair is equally likely, so this is
    also exactly uniform over P (the same objective as ``uniform``), and it needs no
    index, only the query and label of each document (it works on a stream).  The
    expected number of draws per pair is ``n^2 / (2 |P|)``.

Queries whose documents all share one label contribute no pair and are never
sampled by the index-based samplers (``indexed``, ``uniform``, ``sofia``).

The generator is xoshiro256** (Blackman & Vigna) with its 4-word state in a uint64
array, so a run can be cut into segments (checkpoints) and continued bit-identically.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import njit

SAMPLER_INDEXED = 0
SAMPLER_UNIFORM = 1
SAMPLER_REJECTION = 2
SAMPLER_SOFIA = 3

SAMPLERS = {"indexed": SAMPLER_INDEXED, "uniform": SAMPLER_UNIFORM, "rejection": SAMPLER_REJECTION,
            "sofia": SAMPLER_SOFIA}

_U53 = 1.0 / 9007199254740992.0  # 2**-53


def seed_rng_state(random_state: int | np.random.SeedSequence | None) -> np.ndarray:
    """A 4-word xoshiro256** state from an integer seed (None: fresh OS entropy)."""
    if isinstance(random_state, np.random.Generator | np.random.RandomState):
        raise ValueError("random_state must be an int, a SeedSequence or None, not a generator")
    if random_state is not None and not isinstance(random_state, np.random.SeedSequence):
        if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
            raise ValueError(f"random_state must be an int or None, got {random_state!r}")
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
    ss = random_state if isinstance(random_state, np.random.SeedSequence) else np.random.SeedSequence(random_state)
    state = ss.generate_state(4, dtype=np.uint64)
    if not state.any():  # the all-zero state is the one fixed point of xoshiro
        state[0] = np.uint64(0x9E3779B97F4A7C15)
    return state


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, inline="always")
def rng_next(st):
    """xoshiro256** on a state tuple: returns (64-bit output, next state).

    The state travels as a value (a 4-tuple of uint64) so it stays in registers inside
    the kernels; an array state costs a store/load round trip per draw.
    """
    s0, s1, s2, s3 = st
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, (s0, s1, s2, s3)


@njit(cache=True, inline="always")
def rng_uniform(st):
    """A float64 uniform on [0, 1) with 53 random bits, and the next state."""
    r, st = rng_next(st)
    return np.float64(r >> np.uint64(11)) * _U53, st


@njit(cache=True, inline="always")
def rng_below(st, k):
    """An integer uniform on [0, k) (k >= 1; bias below k / 2**53), and the next state."""
    u, st = rng_uniform(st)
    r = np.int64(u * k)
    return (r if r < k else k - 1), st


@njit(cache=True, inline="always")
def rng_load(rng):
    """The state tuple held in a 4-word uint64 array."""
    return (rng[0], rng[1], rng[2], rng[3])


@njit(cache=True, inline="always")
def rng_store(rng, st):
    """Write a state tuple back into its 4-word array."""
    rng[0] = st[0]
    rng[1] = st[1]
    rng[2] = st[2]
    rng[3] = st[3]


@dataclass(frozen=True)
class PairIndex:
    """The sampling index of one ranking data set (built once, O(n log n)).

    Documents are regrouped by (query, label) into *groups*: group ``g`` holds rows
    ``order[group_start[g]:group_start[g+1]]``, all with label ``group_label[g]``.
    Only queries with at least two labels are kept; valid query ``k`` owns groups
    ``query_group_ptr[k]:query_group_ptr[k+1]`` (labels increasing).  A *block* is a
    (higher group, lower group) couple of one query: ``block_hi``, ``block_lo``,
    with its Walker alias table ``alias_prob`` / ``alias_idx`` for draws with
    probability ``n_hi n_lo / |P|``.  ``pos_group`` (group of each position of
    ``order``), ``group_query`` (valid query of each group) and ``group_span`` (per
    group: its query's first position, the query's documents outside the group, the
    group's first position and size, flattened by 4) serve the ``sofia`` sampler; ``doc_query`` (query position of each row) and ``y`` the rejection sampler.
    """

    order: np.ndarray
    group_start: np.ndarray
    group_label: np.ndarray
    query_group_ptr: np.ndarray
    block_hi: np.ndarray
    block_lo: np.ndarray
    block_pairs: np.ndarray
    alias_prob: np.ndarray
    alias_idx: np.ndarray
    pos_group: np.ndarray
    group_query: np.ndarray
    group_span: np.ndarray
    doc_query: np.ndarray
    y: np.ndarray
    n_pairs: int

    def on_rows(self, rows: np.ndarray) -> PairIndex:
        """This index for the same documents stored in another order: position ``p`` of the
        indexed data is row ``rows[p]`` of the storage (``rows`` a permutation); O(n).

        The ``indexed``, ``uniform`` and ``sofia`` samplers then draw the same pairs, as rows
        of the storage, with the same labels.  The ``rejection`` sampler draws uniform
        positions, so it needs the data in the indexed order (not this).
        """
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        n = self.y.shape[0]
        if rows.shape != (n,):
            raise ValueError(f"rows must hold one storage row per indexed document ({n}), "
                             f"got shape {rows.shape}")
        position = np.full(n, -1, dtype=np.int64)
        if n and (rows.min() < 0 or rows.max() >= n):
            raise ValueError("rows must be a permutation of 0..n-1")
        position[rows] = np.arange(n, dtype=np.int64)
        if np.any(position < 0):
            raise ValueError("rows must be a permutation of 0..n-1")
        return replace(self, order=rows[self.order], doc_query=self.doc_query[position],
                       y=self.y[position])

    @property
    def n_valid_queries(self) -> int:
        return int(self.query_group_ptr.shape[0] - 1)

    def sampler_arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays every sampling kernel takes, in kernel argument order."""
        return (self.order, self.group_start, self.query_group_ptr, self.block_hi,
                self.block_lo, self.alias_prob, self.alias_idx, self.pos_group,
                self.group_span, self.doc_query, self.y)


def build_pair_index(y: np.ndarray, query_ptr: np.ndarray) -> PairIndex:
    """Index documents by (query, label) for O(1) pair sampling; O(n log n).

    ``y`` int64 labels and ``query_ptr`` query offsets as in RankingData.  Raises
    ValueError when no query holds two documents with different labels (P empty).
    """
    y = np.ascontiguousarray(y, dtype=np.int64)
    query_ptr = np.ascontiguousarray(query_ptr, dtype=np.int64)
    n = y.shape[0]
    if query_ptr.ndim != 1 or query_ptr.shape[0] < 2 or query_ptr[0] != 0 or query_ptr[-1] != n:
        raise ValueError("query_ptr must run from 0 to len(y) with one entry per query boundary")
    if np.any(np.diff(query_ptr) <= 0):
        raise ValueError("query_ptr must be strictly increasing (no empty query)")
    n_queries = query_ptr.shape[0] - 1
    doc_query = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(query_ptr))
    order = np.lexsort((y, doc_query)).astype(np.int64)
    ys = y[order]
    qs = doc_query[order]
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = (ys[1:] != ys[:-1]) | (qs[1:] != qs[:-1])
    g_first = np.flatnonzero(new_group)
    g_query = qs[g_first]
    levels_per_query = np.bincount(g_query, minlength=n_queries)
    valid_query = levels_per_query >= 2
    if not valid_query.any():
        raise ValueError(
            "no valid pairs: every query has a single relevance label, so there is no "
            "pair of documents of one query with different labels to learn from"
        )
    keep_group = valid_query[g_query]
    g_count = np.diff(np.append(g_first, n))
    # Rebuild order with only the documents of valid queries, groups kept in place.
    keep_doc = np.repeat(keep_group, g_count)
    order = order[keep_doc]
    counts = g_count[keep_group]
    group_start = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=group_start[1:])
    group_label = ys[g_first][keep_group]
    groups_per_valid = levels_per_query[valid_query]
    query_group_ptr = np.zeros(groups_per_valid.shape[0] + 1, dtype=np.int64)
    np.cumsum(groups_per_valid, out=query_group_ptr[1:])
    block_hi, block_lo, block_pairs = _blocks(query_group_ptr, counts)
    n_pairs = int(block_pairs.sum())
    alias_prob, alias_idx = alias_table(block_pairs.astype(np.float64))
    pos_group = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
    group_query = np.repeat(np.arange(groups_per_valid.shape[0], dtype=np.int64), groups_per_valid)
    q_first = group_start[query_group_ptr[group_query]]
    q_size = group_start[query_group_ptr[group_query + 1]] - q_first
    group_span = np.stack([q_first, q_size - counts, group_start[:-1], counts], axis=1).ravel()
    return PairIndex(order=order, group_start=group_start, group_label=group_label,
                     query_group_ptr=query_group_ptr, block_hi=block_hi, block_lo=block_lo,
                     block_pairs=block_pairs, alias_prob=alias_prob, alias_idx=alias_idx,
                     pos_group=pos_group, group_query=group_query,
                     group_span=np.ascontiguousarray(group_span, dtype=np.int64),
                     doc_query=doc_query, y=y,
                     n_pairs=n_pairs)


@njit(cache=True)
def _blocks(query_group_ptr, counts):
    n_blocks = 0
    for k in range(query_group_ptr.shape[0] - 1):
        m = query_group_ptr[k + 1] - query_group_ptr[k]
        n_blocks += m * (m - 1) // 2
    hi = np.empty(n_blocks, dtype=np.int64)
    lo = np.empty(n_blocks, dtype=np.int64)
    pairs = np.empty(n_blocks, dtype=np.int64)
    pos = 0
    for k in range(query_group_ptr.shape[0] - 1):
        for g in range(query_group_ptr[k] + 1, query_group_ptr[k + 1]):
            for h in range(query_group_ptr[k], g):
                hi[pos] = g
                lo[pos] = h
                pairs[pos] = counts[g] * counts[h]
                pos += 1
    return hi, lo, pairs


@njit(cache=True)
def alias_table(weights):
    """Walker/Vose alias table for drawing index i with probability weights[i]/sum; O(m)."""
    m = weights.shape[0]
    total = 0.0
    for i in range(m):
        total += weights[i]
    prob = np.empty(m, dtype=np.float64)
    alias = np.arange(m).astype(np.int64)
    scaled = np.empty(m, dtype=np.float64)
    small = np.empty(m, dtype=np.int64)
    large = np.empty(m, dtype=np.int64)
    ns = 0
    nl = 0
    for i in range(m):
        scaled[i] = weights[i] * m / total
        if scaled[i] < 1.0:
            small[ns] = i
            ns += 1
        else:
            large[nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        g = large[nl - 1]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        if scaled[g] < 1.0:
            nl -= 1
            small[ns] = g
            ns += 1
    # Leftovers are 1 up to rounding.
    for i in range(nl):
        prob[large[i]] = 1.0
    for i in range(ns):
        prob[small[i]] = 1.0
    return prob, alias


@njit(cache=True, inline="always")
def _doc_of_group(st, order, group_start, g):
    lo = group_start[g]
    r, st = rng_below(st, group_start[g + 1] - lo)
    return order[lo + r], st


@njit(cache=True, inline="always")
def draw_indexed(st, order, group_start, query_group_ptr):
    """The paper's sampler: query, two distinct labels, one document of each; O(1)."""
    k, st = rng_below(st, query_group_ptr.shape[0] - 1)
    g0 = query_group_ptr[k]
    n_levels = query_group_ptr[k + 1] - g0
    la, st = rng_below(st, n_levels)
    lb, st = rng_below(st, n_levels - 1)
    if lb >= la:
        lb += 1
    a, st = _doc_of_group(st, order, group_start, g0 + la)
    b, st = _doc_of_group(st, order, group_start, g0 + lb)
    return a, b, st


@njit(cache=True, inline="always")
def draw_uniform(st, order, group_start, block_hi, block_lo, alias_prob, alias_idx):
    """Exactly uniform over P: a block by its alias table, one document of each side; O(1)."""
    j, st = rng_below(st, alias_prob.shape[0])
    u, st = rng_uniform(st)
    if u >= alias_prob[j]:
        j = alias_idx[j]
    a, st = _doc_of_group(st, order, group_start, block_hi[j])
    b, st = _doc_of_group(st, order, group_start, block_lo[j])
    return a, b, st


@njit(cache=True, inline="always")
def draw_sofia(st, order, pos_group, group_span):
    """sofia-ml's rank loop: a uniform document, b uniform among its query's other labels; O(1).

    The query's documents are contiguous in ``order`` and a's label group is one block of
    them: b is drawn among the others and steps over that block.  ``group_span`` holds, per
    group, [first position of its query, documents of the query outside the group, first
    position of the group, group size] (one cache line: two dependent loads, not five).
    """
    pa, st = rng_below(st, order.shape[0])
    base = 4 * pos_group[pa]
    q_lo = group_span[base]
    n_other = group_span[base + 1]
    g_lo = group_span[base + 2]
    r, st = rng_below(st, n_other)
    pb = q_lo + r
    if pb >= g_lo:
        pb += group_span[base + 3]
    return order[pa], order[pb], st


@njit(cache=True, inline="always")
def draw_rejection(st, doc_query, y):
    """Two uniform documents until same query and different labels; O(n^2 / |P|) expected.

    Returns (a, b, number of rejected draws, next state).
    """
    n = y.shape[0]
    rejected = 0
    while True:
        a, st = rng_below(st, n)
        b, st = rng_below(st, n)
        if doc_query[a] == doc_query[b] and y[a] != y[b]:
            return a, b, rejected, st
        rejected += 1


@njit(cache=True, inline="always")
def draw_pair(sampler, st, order, group_start, query_group_ptr, block_hi, block_lo,
              alias_prob, alias_idx, pos_group, group_span, doc_query, y):
    """One candidate pair from the sampler coded ``sampler``: (a, b, rejected draws, next state).

    a, b are rows of one query with y_a != y_b.
    """
    if sampler == SAMPLER_INDEXED:
        a, b, st = draw_indexed(st, order, group_start, query_group_ptr)
        return a, b, 0, st
    if sampler == SAMPLER_UNIFORM:
        a, b, st = draw_uniform(st, order, group_start, block_hi, block_lo, alias_prob, alias_idx)
        return a, b, 0, st
    if sampler == SAMPLER_SOFIA:
        a, b, st = draw_sofia(st, order, pos_group, group_span)
        return a, b, 0, st
    return draw_rejection(st, doc_query, y)


@njit(cache=True)
def _draw_pairs_kernel(k, sampler, rng, order, group_start, query_group_ptr, block_hi,
                       block_lo, alias_prob, alias_idx, pos_group, group_span, doc_query, y,
                       counters):
    a_out = np.empty(k, dtype=np.int64)
    b_out = np.empty(k, dtype=np.int64)
    st = rng_load(rng)
    rejected = 0
    for i in range(k):
        a, b, r, st = draw_pair(sampler, st, order, group_start, query_group_ptr, block_hi,
                                block_lo, alias_prob, alias_idx, pos_group, group_span,
                                doc_query, y)
        rejected += r
        a_out[i] = a
        b_out[i] = b
    rng_store(rng, st)
    counters[0] += rejected
    return a_out, b_out


def sampler_code(sampler: str) -> int:
    """The kernel code of a sampler name; ValueError naming the known ones."""
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; known samplers: {', '.join(SAMPLERS)}")
    return SAMPLERS[sampler]


def draw_pairs(index: PairIndex, sampler: str, k: int, random_state: int | None = 0
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """Draw ``k`` pairs with the SPD kernel's sampler: rows ``(a, b)`` and the rejected-draw count.

    Same code path as the training kernel; for tests and diagnostics.
    """
    code = sampler_code(sampler)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rng = seed_rng_state(random_state)
    counters = np.zeros(1, dtype=np.int64)
    a, b = _draw_pairs_kernel(int(k), code, rng, *index.sampler_arrays(), counters)
    return a, b, int(counters[0])


def pair_probabilities(index: PairIndex, sampler: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of P as rows ``(hi, lo)`` (y_hi > y_lo) with its sampling probability pi.

    O(|P|): enumerates P, so for small problems (tests, diagnostics) only.
    """
    code = sampler_code(sampler)
    hi_rows, lo_rows, probs = [], [], []
    n_valid = index.n_valid_queries
    for blk in range(index.block_hi.shape[0]):
        gh, gl = int(index.block_hi[blk]), int(index.block_lo[blk])
        docs_h = index.order[index.group_start[gh]:index.group_start[gh + 1]]
        docs_l = index.order[index.group_start[gl]:index.group_start[gl + 1]]
        k = int(index.group_query[gh])
        if code == SAMPLER_INDEXED:
            n_lev = int(index.query_group_ptr[k + 1] - index.query_group_ptr[k])
            p = 2.0 / (n_valid * n_lev * (n_lev - 1) * docs_h.size * docs_l.size)
        elif code == SAMPLER_SOFIA:
            n_q = int(index.group_start[index.query_group_ptr[k + 1]]
                      - index.group_start[index.query_group_ptr[k]])
            p = (1.0 / (n_q - docs_h.size) + 1.0 / (n_q - docs_l.size)) / index.order.shape[0]
        else:
            p = 1.0 / index.n_pairs
        hh, ll = np.meshgrid(docs_h, docs_l, indexing="ij")
        hi_rows.append(hh.ravel())
        lo_rows.append(ll.ravel())
        probs.append(np.full(hh.size, p))
    return np.concatenate(hi_rows), np.concatenate(lo_rows), np.concatenate(probs)
