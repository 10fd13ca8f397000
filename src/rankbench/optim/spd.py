"""Stochastic Pairwise Descent (Sculley 2009, Alg. 1): sample a pair, take one learner step.

The whole loop (sampling + step) runs in one numba kernel per segment; a run is cut
into segments at the checkpoints and the state (w as scale * v, step counter, RNG
state) is carried over, so a run with checkpoints is bit-identical to one without.
P is never materialised: the sampler draws from the PairIndex (samplers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

from rankbench.optim.pair_steps import (
    ETA_DEFAULT_C,
    ETA_SCHEDULES,
    LEARNERS,
    STEP_FASTMATH,
    pair_step_dense,
    pair_step_sparse,
    prefetch_row,
)
from rankbench.optim.samplers import (
    PairIndex,
    draw_pair,
    rng_load,
    rng_store,
    sampler_code,
    seed_rng_state,
)


# Both segment kernels are compiled without the runtime's reference counting: they
# allocate nothing, and with it every array handed to an IR-inlined helper (the pair step,
# the samplers) cost atomic incref/decref calls on every step, 28 % of a Pegasos step on
# OHSUMED (probe: issue 21's closing note).  The dense kernel carries pair_step_dense's
# fastmath flags (STEP_FASTMATH), which its IR-inlined body compiles under; the samplers'
# only float operations are a product with 2**-53 and one with an integer, which
# reassociation leaves bit-identical.
@njit(cache=True, _nrt=False, fastmath=STEP_FASTMATH)
def spd_segment_dense(X, n_steps, learner, lam, C, eta_mode, eta_c, sampler, order, group_start,
                      query_group_ptr, block_hi, block_lo, alias_prob, alias_idx, pos_group,
                      group_span, doc_query, y, rng, v, fstate, counters):
    """Run ``n_steps`` SPD steps on dense X; O(n_steps d).

    State carried over between calls: ``v``, ``fstate = [scale, ||v||^2]``, the RNG
    words ``rng`` and ``counters = [rejected draws, steps taken t, steps that added x]``.
    """
    st = rng_load(rng)
    scale = fstate[0]
    vsq = fstate[1]
    t = counters[1]
    rejected = 0
    added = 0
    # Software pipelining: the pair of step i + 1 is drawn (same draws, same order) before
    # step i's update and its rows are prefetched, so their cache misses overlap step i.
    na = 0
    nb = 0
    if n_steps > 0:
        na, nb, rejected, st = draw_pair(sampler, st, order, group_start, query_group_ptr,
                                         block_hi, block_lo, alias_prob, alias_idx, pos_group,
                                         group_span, doc_query, y)
    for i in range(n_steps):
        a = na
        b = nb
        if i + 1 < n_steps:
            na, nb, r, st = draw_pair(sampler, st, order, group_start, query_group_ptr,
                                      block_hi, block_lo, alias_prob, alias_idx, pos_group,
                                      group_span, doc_query, y)
            rejected += r
            prefetch_row(X, na)
            prefetch_row(X, nb)
        t += 1
        yab = 1.0 if y[a] > y[b] else -1.0
        scale, vsq, upd = pair_step_dense(X, a, b, yab, t, learner, lam, C, eta_mode, eta_c, v,
                                          scale, vsq)
        added += upd
    rng_store(rng, st)
    fstate[0] = scale
    fstate[1] = vsq
    counters[0] += rejected
    counters[1] = t
    counters[2] += added


@njit(cache=True, _nrt=False)
def spd_segment_sparse(data, indices, indptr, n_steps, learner, lam, C, eta_mode, eta_c, sampler,
                       order,
                       group_start, query_group_ptr, block_hi, block_lo, alias_prob,
                       alias_idx, pos_group, group_span, doc_query, y, rng, v, fstate,
                       counters):
    """Run ``n_steps`` SPD steps on CSR X; O(n_steps * (nnz(a) + nnz(b)))."""
    st = rng_load(rng)
    scale = fstate[0]
    vsq = fstate[1]
    t = counters[1]
    rejected = 0
    added = 0
    for _ in range(n_steps):
        a, b, r, st = draw_pair(sampler, st, order, group_start, query_group_ptr, block_hi,
                                block_lo, alias_prob, alias_idx, pos_group, group_span,
                                doc_query, y)
        rejected += r
        t += 1
        yab = 1.0 if y[a] > y[b] else -1.0
        scale, vsq, upd = pair_step_sparse(data, indices, indptr, a, b, yab, t, learner, lam,
                                           C, eta_mode, eta_c, v, scale, vsq)
        added += upd
    rng_store(rng, st)
    fstate[0] = scale
    fstate[1] = vsq
    counters[0] += rejected
    counters[1] = t
    counters[2] += added


def learner_code(learner: str) -> int:
    """The kernel code of a learner name; ValueError naming the known ones."""
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}; known learners: {', '.join(LEARNERS)}")
    return LEARNERS[learner]


@dataclass
class SPDState:
    """Everything an SPD run carries between segments: w = scale * v, counters, RNG."""

    v: np.ndarray
    fstate: np.ndarray  # [scale, ||v||^2]
    counters: np.ndarray  # [rejected draws, steps t, updating steps]
    rng: np.ndarray
    history: list = field(default_factory=list)

    @classmethod
    def start(cls, n_features: int, random_state) -> SPDState:
        """w = 0 at step 0 with the RNG seeded from ``random_state``."""
        return cls(v=np.zeros(n_features), fstate=np.array([1.0, 0.0]),
                   counters=np.zeros(3, dtype=np.int64), rng=seed_rng_state(random_state))

    @property
    def n_steps(self) -> int:
        return int(self.counters[1])

    @property
    def n_rejected(self) -> int:
        return int(self.counters[0])

    @property
    def n_updates(self) -> int:
        return int(self.counters[2])

    def coef(self) -> np.ndarray:
        """w as a fresh dense array; O(d)."""
        return self.fstate[0] * self.v


def prepare_X(X):
    """X in the kernels' layout: C-contiguous float64, or CSR with sorted int32/int64 indices."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        return X
    return np.ascontiguousarray(X, dtype=np.float64)


def run_segment(X, index: PairIndex, state: SPDState, n_steps: int, learner: str,
                lam: float, C: float, sampler: str, eta: str = "pegasos",
                eta_c: float | None = None) -> None:
    """Advance ``state`` by ``n_steps`` SPD steps in one kernel call (arguments checked by the caller).

    ``C`` is the learner's constant (PA-I aggressiveness, perceptron margin); ``eta`` the
    step-size schedule (ETA_SCHEDULES) and ``eta_c`` its constant (None: sofia-ml's).
    """
    lcode = learner_code(learner)
    scode = sampler_code(sampler)
    if eta not in ETA_SCHEDULES:
        raise ValueError(f"unknown eta schedule {eta!r}; known: {', '.join(ETA_SCHEDULES)}")
    ecode = ETA_SCHEDULES[eta]
    ec = ETA_DEFAULT_C[eta] if eta_c is None else eta_c
    ec = 0.0 if ec is None else float(ec)
    arrays = index.sampler_arrays()
    if sp.issparse(X):
        spd_segment_sparse(X.data, X.indices, X.indptr, int(n_steps), lcode, float(lam),
                           float(C), ecode, ec, scode, *arrays, state.rng, state.v,
                           state.fstate, state.counters)
    else:
        spd_segment_dense(X, int(n_steps), lcode, float(lam), float(C), ecode, ec, scode,
                          *arrays, state.rng, state.v, state.fstate, state.counters)
