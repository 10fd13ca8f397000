"""Synthetic stand-ins for registered data sets that are not on disk (``load_fold(..., allow_synthetic=True)``).

A stand-in has the real set's width, relevance levels, label shares (when published),
documents per query, fold layout and split shares, is marked ``synthetic=True`` with
``meta["stand_in_for"]`` and a name starting "synthetic stand-in for", and is seeded by
the data set's name, so the same call always gives the same data.  Large sets are
scaled down in queries (never in width or documents per query) to at most
``STAND_IN_MAX_CELLS`` feature values, so that asking for a stand-in of MSLR-WEB30K or
Istella-S cannot exhaust the machine; ``meta["stand_in_scale"]`` is the share of
queries kept.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import scipy.sparse as sp

from rankbench.data.catalog import DatasetSpec
from rankbench.data.ranking_data import RankingData
from rankbench.data.rcv1 import rcv1_part_rows
from rankbench.data.synthetic import (
    RCV1_N_BIG,
    RCV1_N_FEATURES,
    RCV1_N_SMALL,
    _freeze,
    _letor_like_cached,
    _rcv1_like_cached,
    letor_fold_queries,
    one_query_data,
    single_query_rows,
)

# 2**24 float64 values = 128 MiB of X; every LETOR 3.0 / 4.0 set fits whole.
STAND_IN_MAX_CELLS = 1 << 24


def stand_in_split(spec: DatasetSpec, fold: int, split: str, variant: str | None = None,
                   **params: Any) -> RankingData:
    """A synthetic split shaped like the missing data set ``spec``, labelled as its stand-in.

    Query-based sets: ``make_letor_like`` with the set's number of queries (scaled down
    to ``STAND_IN_MAX_CELLS``), mean documents per query, width, relevance levels and
    label shares (``stats["labels"]`` when published, ``stats["approx_relevant_rate"]``
    for the .gov sets, else the generator's default), cut into LETOR's 5-fold rotation
    or, for one-fold sets, into the published train/vali/test shares of queries.
    RCV1 tasks: ``make_rcv1_like`` with 23,149 + 781,265 rows laid out like
    fetch_rcv1 (Lewis training part first) and the task's class balance (CCAT 47%,
    E311 0.2%); ``params`` take the real loader's ``vali_fraction``, ``holdout``, ``seed``.
    """
    seed = zlib.crc32(spec.name.encode())
    name = f"synthetic stand-in for {spec.name}"
    if spec.family == "rcv1":
        return _rcv1_stand_in(spec, fold, split, variant, seed, name, params)
    if params:
        raise TypeError(f"load_fold({spec.name!r}) got unexpected parameters {sorted(params)}")
    n_real = int(spec.stats.get("n_queries", 100))
    per_q = max(2, round(spec.stats.get("n_docs", 40 * n_real) / n_real))
    width = spec.n_features or 20
    min_queries = 5 if spec.n_folds > 1 else 3
    n_q = min(n_real, max(min_queries, STAND_IN_MAX_CELLS // (per_q * width)))
    data = _letor_like_cached(_freeze({"n_queries": n_q, "docs_per_query": per_q,
                                       "n_features": width, "n_levels": spec.n_levels,
                                       "noise": 0.5, "model": "linear", "seed": seed,
                                       "level_shares": label_shares(spec)}))
    if spec.n_folds > 1:
        queries = letor_fold_queries(n_q, fold, seed)[split]
    else:
        queries = split_queries(n_q, split_shares(spec), seed)[split]
    part = data.subset_queries(queries)
    X = sp.csr_matrix(part.X) if spec.sparse else part.X
    return RankingData(X=X, y=part.y, qid=part.qid, query_ptr=part.query_ptr, name=name,
                       synthetic=True,
                       meta={"order": None, "fold": fold, "split": split, "variant": variant,
                             "stand_in_for": spec.name, "stand_in_scale": n_q / n_real})


def label_shares(spec: DatasetSpec) -> tuple[float, ...] | None:
    """Share of each relevance level in ``spec``'s published statistics, or None when not published."""
    labels = spec.stats.get("labels")
    if labels and len(labels) == spec.n_levels:
        total = sum(labels.values())
        return tuple(labels[k] / total for k in range(spec.n_levels))
    rate = spec.stats.get("approx_relevant_rate")
    if rate and spec.n_levels == 2:
        return (1 - rate, rate)
    return None


def split_shares(spec: DatasetSpec) -> dict[str, float]:
    """Share of queries in train / vali / test of a one-fold set (published counts, else its split_share)."""
    counts = spec.stats.get("split_queries")
    if counts:
        total = sum(counts.values())
        return {s: counts[s] / total for s in ("train", "vali", "test")}
    return dict(spec.stats.get("split_share", {"train": 0.6, "vali": 0.2, "test": 0.2}))


def split_queries(n_queries: int, shares: dict[str, float], seed: int) -> dict[str, np.ndarray]:
    """Query positions of train / vali / test: a seeded permutation cut by ``shares`` (each part >= 1)."""
    perm = np.random.default_rng([seed, 0x5EED]).permutation(n_queries)
    n_vali = max(1, round(shares["vali"] * n_queries))
    n_test = max(1, round(shares["test"] * n_queries))
    n_train = n_queries - n_vali - n_test
    if n_train < 1:
        raise ValueError(f"{n_queries} queries cannot be split into train / vali / test")
    return {"train": np.sort(perm[:n_train]), "vali": np.sort(perm[n_train:n_train + n_vali]),
            "test": np.sort(perm[n_train + n_vali:])}


def _rcv1_stand_in(spec, fold, split, variant, seed, name, params) -> RankingData:
    opts = {"vali_fraction": 0.05, "holdout": False, "seed": 0, "download": False,
            "data_home": None, "train_size": None}
    unknown = set(params) - set(opts)
    if unknown:
        raise TypeError(f"unknown RCV1 parameters {sorted(unknown)}; known: {sorted(opts)}")
    opts.update(params)
    small, big = RCV1_N_SMALL, RCV1_N_BIG
    data = _rcv1_like_cached(_freeze({
        "n": small + big, "d": RCV1_N_FEATURES, "nnz_per_row": 75, "noise": 0.3, "seed": seed,
        "positive_rate": 0.47 if spec.name == "rcv1_ccat" else 0.002}))
    train, test = rcv1_part_rows(variant or "papers", small + big, small)
    rows = single_query_rows(train, test, split, opts["vali_fraction"], bool(opts["holdout"]),
                             int(opts["seed"]), opts["train_size"])
    return one_query_data(data.X[rows], data.y[rows], name, synthetic=True,
                          meta={"split": split, "fold": fold, "variant": variant,
                                "stand_in_for": spec.name,
                                "vali_in_train": split != "test" and not opts["holdout"]})
