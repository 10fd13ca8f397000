"""Seeded synthetic data: LETOR-like graded queries and an RCV1-like sparse binary task.

Both return :class:`RankingData` with ``synthetic=True`` and "synthetic" in the name, so
every table and figure built on them can say so.  ``load_synthetic_split`` cuts them
into folds the way LETOR does (five query partitions S1..S5, fold k trains on three,
validates on the fourth, tests on the fifth).  Stand-ins for registered data sets that
are not on disk are built from these generators by :mod:`rankbench.data.stand_in`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData

LETOR_DEFAULTS: dict[str, Any] = {"n_queries": 100, "docs_per_query": 40, "n_features": 20,
                                  "n_levels": 3, "noise": 0.5, "model": "linear", "seed": 0,
                                  "level_shares": None}
# The Lewis et al. (2004) RCV1-v2 split sizes: the papers train on the large part.
RCV1_N_BIG = 781_265
RCV1_N_SMALL = 23_149
RCV1_N_FEATURES = 47_236
RCV1_LIKE_DEFAULTS: dict[str, Any] = {"n": RCV1_N_BIG, "n_test": RCV1_N_SMALL,
                                      "d": RCV1_N_FEATURES, "nnz_per_row": 75,
                                      "positive_rate": 0.47, "noise": 0.3, "seed": 0,
                                      "vali_fraction": 0.05, "holdout": False,
                                      "train_size": None}


def _check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_noise(noise: Any) -> float:
    if not isinstance(noise, int | float) or not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    return float(noise)


def _doc_counts(docs_per_query: Any, n_queries: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(docs_per_query, tuple | list):
        if len(docs_per_query) != 2:
            raise ValueError(f"docs_per_query as a range must be (low, high), got {docs_per_query!r}")
        lo = _check_positive_int("docs_per_query low", docs_per_query[0])
        hi = _check_positive_int("docs_per_query high", docs_per_query[1])
        if hi < lo:
            raise ValueError(f"docs_per_query range ({lo}, {hi}) is empty")
    else:
        mean = _check_positive_int("docs_per_query", docs_per_query)
        lo, hi = max(1, mean - mean // 2), mean + mean // 2
    return rng.integers(lo, hi + 1, size=n_queries)


def make_letor_like(
    n_queries: int = 100,
    docs_per_query: int | tuple[int, int] = 40,
    n_features: int = 20,
    n_levels: int = 3,
    noise: float = 0.5,
    model: str = "linear",
    seed: int = 0,
    level_shares: Any = None,
) -> RankingData:
    """Queries of documents with graded labels from a noisy linear or non-linear model. O(n d).

    ``docs_per_query`` is a mean (counts drawn uniformly in [mean/2, 3 mean/2]) or a
    (low, high) range.  Features are standard normal plus a per-query shift (queries
    differ, as in LETOR).  The latent score is ``X w`` ("linear") or a sum of
    sinusoids and pairwise products ("nonlinear"); Gaussian noise of ``noise`` times
    the latent score's standard deviation is added, and labels 0..n_levels-1 come from
    global quantiles so that higher levels are rarer: level k's share is proportional
    to 0.45**k (about 60/27/12% for 3 levels) unless ``level_shares`` gives the shares.
    ``meta["w"]`` holds the linear model's weights.
    """
    n_queries = _check_positive_int("n_queries", n_queries)
    n_features = _check_positive_int("n_features", n_features)
    n_levels = _check_positive_int("n_levels", n_levels, minimum=2)
    noise = _check_noise(noise)
    if model not in ("linear", "nonlinear"):
        raise ValueError(f"model must be 'linear' or 'nonlinear', got {model!r}")
    if level_shares is None:
        share = 0.45 ** np.arange(n_levels)  # most documents are irrelevant
    else:
        share = np.asarray(level_shares, dtype=np.float64)
        if share.shape != (n_levels,) or not np.all(np.isfinite(share)) or np.any(share <= 0):
            raise ValueError(f"level_shares must be {n_levels} positive numbers, got {level_shares!r}")
    share = share / share.sum()
    rng = np.random.default_rng(seed)
    sizes = _doc_counts(docs_per_query, n_queries, rng)
    n = int(sizes.sum())
    qid = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), sizes)
    shift = rng.normal(0.0, 0.5, size=(n_queries, n_features))
    X = rng.standard_normal((n, n_features)) + shift[qid - 1]
    w = rng.standard_normal(n_features) / np.sqrt(n_features)
    if model == "linear":
        latent = X @ w
    else:
        U = rng.standard_normal((n_features, 8)) / np.sqrt(n_features)
        Z = X @ U
        latent = np.sin(2.0 * Z[:, :4]).sum(axis=1) + 0.5 * (Z[:, 4] * Z[:, 5] - Z[:, 6] * Z[:, 7])
    latent = latent - latent.mean()
    score = latent + noise * latent.std() * rng.standard_normal(n)
    cuts = np.quantile(score, np.cumsum(share)[:-1])
    y = np.searchsorted(cuts, score, side="right").astype(np.int64)
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    meta = {"generator": "make_letor_like", "model": model, "noise": noise, "seed": seed,
            "n_levels": n_levels, "w": w, "order": None}
    return RankingData(X=np.ascontiguousarray(X), y=y, qid=qid, query_ptr=ptr,
                       name=f"synthetic_letor_like_{model}", source=None, synthetic=True, meta=meta)


def make_rcv1_like(
    n: int = RCV1_N_BIG,
    d: int = RCV1_N_FEATURES,
    nnz_per_row: int = 75,
    positive_rate: float = 0.47,
    seed: int = 0,
    noise: float = 0.3,
) -> RankingData:
    """A sparse binary single-query task shaped like RCV1-v2. O(n * nnz_per_row), vectorized.

    Row lengths are Poisson(nnz_per_row) (at least 1, a little less after merging
    repeated ids); column ids are sorted, distinct, and skewed in frequency like a
    vocabulary (id c has frequency ~ 1/sqrt(c)); values are
    positive and every row has unit L2 norm (cosine-normalised tf-idf, as RCV1-v2).
    Labels: 1 for the top ``positive_rate`` share of ``X w + noise * std * N(0, 1)``
    with ``w`` supported on 10% of the features, so the task is learnable but not
    separable.  ``meta["w"]`` holds the weights.  The RCV1 size (781,265 x 47,236,
    ~75 nnz per row) takes a few seconds.
    """
    n = _check_positive_int("n", n)
    d = _check_positive_int("d", d, minimum=2)
    nnz_per_row = _check_positive_int("nnz_per_row", nnz_per_row)
    if nnz_per_row > d:
        raise ValueError(f"nnz_per_row ({nnz_per_row}) cannot exceed d ({d})")
    if not 0.0 < float(positive_rate) < 1.0:
        raise ValueError(f"positive_rate must be in (0, 1), got {positive_rate!r}")
    noise = _check_noise(noise)
    rng = np.random.default_rng(seed)
    length = np.maximum(rng.poisson(nnz_per_row, size=n), 1).astype(np.int64)
    cap = int(length.sum())
    indptr = np.empty(n + 1, dtype=np.int64)
    col = np.empty(cap, dtype=np.int32)
    val = np.empty(cap, dtype=np.float64)
    nnz = _rcv1_like_kernel(length, d, int(rng.integers(1, 2**62)), indptr, col, val)
    X = sp.csr_matrix((val[:nnz], col[:nnz], indptr), shape=(n, d))
    X.has_sorted_indices = True
    support = rng.random(d) < 0.1
    w = np.where(support, rng.standard_normal(d), 0.0)
    latent = X @ w
    score = latent + noise * latent.std() * rng.standard_normal(n)
    cut = np.partition(score, n - max(1, round(positive_rate * n)))[n - max(1, round(positive_rate * n))]
    y = (score >= cut).astype(np.int64)
    meta = {"generator": "make_rcv1_like", "positive_rate": float(positive_rate), "noise": noise,
            "seed": seed, "w": w, "order": None}
    return RankingData(X=X, y=y, qid=np.zeros(n, dtype=np.int64),
                       query_ptr=np.array([0, n], dtype=np.int64), name="synthetic_rcv1_like",
                       source=None, synthetic=True, meta=meta)


@numba.njit(cache=True, inline="always")
def _splitmix64(state):
    """Next (state, uniform in [0, 1)): a counter-based generator with no global state."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return state, float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True)
def _rcv1_like_kernel(length, d, seed, indptr, col, val):
    """Fill CSR rows: sorted distinct skewed column ids, unit-norm positive values. O(nnz)."""
    state = np.uint64(seed)
    n = length.shape[0]
    pos = 0
    for r in range(n):
        indptr[r] = pos
        k = length[r]
        start = pos
        last = -1
        norm2 = 0.0
        for j in range(k):
            # one uniform per stratum [j/k, (j+1)/k): sorted without a sort; x**2 keeps
            # the order and makes low ids common (frequency of id c ~ 1/sqrt(c))
            state, u = _splitmix64(state)
            x = (j + u) / k
            c = min(np.int64(d * x * x), d - 1)
            if c != last:
                state, u = _splitmix64(state)
                v = 0.1 + u
                col[pos] = c
                val[pos] = v
                norm2 += v * v
                pos += 1
                last = c
        inv = 1.0 / np.sqrt(norm2)
        for j in range(start, pos):
            val[j] *= inv
    indptr[n] = pos
    return pos


def letor_fold_queries(n_queries: int, fold: int, seed: int) -> dict[str, np.ndarray]:
    """Query positions of train/vali/test for ``fold`` (1..5): LETOR's rotation over 5 seeded parts."""
    perm = np.random.default_rng([seed, 0x5EED]).permutation(n_queries)
    parts = np.array_split(perm, 5)
    k = fold - 1
    return {"train": np.sort(np.concatenate([parts[(k + j) % 5] for j in range(3)])),
            "vali": np.sort(parts[(k + 3) % 5]), "test": np.sort(parts[(k + 4) % 5])}


def vali_rows(n_train: int, fraction: float, seed: int) -> np.ndarray:
    """A seeded sorted sample of ``round(fraction * n_train)`` (at least 1) training rows."""
    if not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"vali_fraction must be in (0, 1), got {fraction!r}")
    m = max(1, round(fraction * n_train))
    return np.sort(np.random.default_rng([seed, 0x7A11]).choice(n_train, size=m, replace=False))


def single_query_rows(train: range, test: range, split: str, vali_fraction: float,
                      holdout: bool, seed: int, train_size: int | None = None) -> slice | np.ndarray:
    """Rows of ``split`` in a one-query data set whose training and test parts are row ranges.

    vali is a seeded ``vali_fraction`` sample of the training rows; train keeps it
    unless ``holdout``.  ``train_size`` keeps a seeded sample of that many training rows
    (time-versus-n curves).  Contiguous parts come back as slices (cheap CSR row blocks).
    """
    if split == "test":
        return slice(test.start, test.stop)
    vali = train.start + vali_rows(len(train), vali_fraction, seed)
    if split == "vali":
        return vali
    if holdout:
        keep = np.ones(len(train), dtype=bool)
        keep[vali - train.start] = False
        rows: slice | np.ndarray = train.start + np.flatnonzero(keep)
        available = rows.shape[0]
    else:
        rows = slice(train.start, train.stop)
        available = len(train)
    if train_size is None:
        return rows
    if isinstance(train_size, bool) or int(train_size) != train_size or not 1 <= train_size <= available:
        raise ValueError(f"train_size must be an integer in 1..{available}, got {train_size!r}")
    pick = np.sort(np.random.default_rng([seed, 0x517E]).choice(available, size=int(train_size),
                                                                  replace=False))
    return (train.start + pick) if isinstance(rows, slice) else rows[pick]


@lru_cache(maxsize=4)
def _letor_like_cached(key: tuple) -> RankingData:
    return make_letor_like(**dict(key))


@lru_cache(maxsize=1)
def _rcv1_like_cached(key: tuple) -> RankingData:
    return make_rcv1_like(**dict(key))


def _freeze(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def load_synthetic_split(fold: int, split: str, variant: str | None = None, **params: Any) -> RankingData:
    """One split of one fold of synthetic data (``variant`` None/"letor_like" or "rcv1_like").

    letor_like: ``make_letor_like(**params)`` cut by ``letor_fold_queries`` (seed = the
    generator seed), so folds rotate over one fixed set of queries as in LETOR.
    rcv1_like: ``make_rcv1_like`` over ``n + n_test`` rows, the last ``n_test`` are the
    test split; vali is a ``vali_fraction`` sample of the training rows seeded by the
    fold, removed from train only when ``holdout=True`` (as for real RCV1).
    """
    if variant in (None, "letor_like"):
        unknown = set(params) - set(LETOR_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown synthetic letor_like parameters {sorted(unknown)}; "
                            f"known: {sorted(LETOR_DEFAULTS)}")
        full = {**LETOR_DEFAULTS, **params}
        data = _letor_like_cached(_freeze(full))
        part = data.subset_queries(letor_fold_queries(data.n_queries, fold, int(full["seed"]))[split])
        meta = {**part.meta, "params": {k: v for k, v in full.items()}, "fold": fold,
                "split": split, "variant": "letor_like"}
        meta["w"] = data.meta["w"]
        return RankingData(X=part.X, y=part.y, qid=part.qid, query_ptr=part.query_ptr,
                           name=part.name, synthetic=True, meta=meta)
    if variant == "rcv1_like":
        unknown = set(params) - set(RCV1_LIKE_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown synthetic rcv1_like parameters {sorted(unknown)}; "
                            f"known: {sorted(RCV1_LIKE_DEFAULTS)}")
        full = {**RCV1_LIKE_DEFAULTS, **params}
        n, n_test = _check_positive_int("n", full["n"]), _check_positive_int("n_test", full["n_test"])
        gen = {k: full[k] for k in ("d", "nnz_per_row", "positive_rate", "seed", "noise")}
        data = _rcv1_like_cached(_freeze({**gen, "n": n + n_test}))
        rows = single_query_rows(range(n), range(n, n + n_test), split, full["vali_fraction"],
                                 bool(full["holdout"]), fold, full["train_size"])
        return one_query_data(data.X[rows], data.y[rows], data.name, synthetic=True,
                              meta={"split": split, "fold": fold, "variant": "rcv1_like",
                                    "params": full,
                                    "vali_in_train": split != "test" and not full["holdout"]})
    raise ValueError(f"synthetic has variants 'letor_like' (default) and 'rcv1_like', got {variant!r}")


def one_query_data(X, y: np.ndarray, name: str, synthetic: bool, meta: dict[str, Any],
                   source: str | None = None) -> RankingData:
    """RankingData holding every row in one query (qid 0), as the AUC tasks are."""
    n = y.shape[0]
    if n == 0:
        raise ValueError(f"{name}: split {meta.get('split')!r} is empty")
    return RankingData(X=X, y=y, qid=np.zeros(n, dtype=np.int64),
                       query_ptr=np.array([0, n], dtype=np.int64), name=name, source=source,
                       synthetic=synthetic, meta={"order": None, **meta})
