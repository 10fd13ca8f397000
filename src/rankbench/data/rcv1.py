"""RCV1-v2 binary tasks (CCAT vs rest, E311 vs rest) from scikit-learn's ``fetch_rcv1``.

One query holding every document (the AUC setting), labels 1 for the topic and 0
otherwise, X the cosine-normalised tf-idf CSR matrix (47,236 features).

Splits follow Lewis et al. (2004): ``fetch_rcv1`` stores the 23,149 Lewis *training*
documents first and the 781,265 *test* documents after them.  Chapelle & Keerthi
(2010, Fig. 3) and Sculley (2009, Table 1) train on the large 781,265 part and test
on the 23,149: that is orientation ``"papers"`` (the default); ``"lewis"`` swaps them.
RCV1 has no folds (fold must be 1).  ``vali`` is a seeded ``vali_fraction`` sample of
the training part; it stays in train unless ``holdout=True`` (the papers train on the
whole part with fixed C, so by default train has the papers' size and vali is for
monitoring only, ``meta["vali_in_train"]`` says so).  ``train_size`` keeps a seeded
sample of that many training documents (Chapelle & Keerthi's time-versus-n curve).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from rankbench.data.catalog import DatasetNotFound, dataset_spec, missing_message
from rankbench.data.ranking_data import RankingData
from rankbench.data.synthetic import one_query_data, single_query_rows

LEWIS_N_TRAIN = 23_149
TOPICS = {"rcv1_ccat": "CCAT", "rcv1_e311": "E311"}
ORIENTATIONS = ("papers", "lewis")


def rcv1_homes(root: Path | None, data_home: str | Path | None = None) -> list[Path]:
    """Candidate ``data_home`` folders for fetch_rcv1, in order: ``data_home``, ``<root>/rcv1``,
    scikit-learn's default (``SCIKIT_LEARN_DATA`` or ``~/scikit_learn_data``)."""
    from sklearn.datasets import get_data_home

    homes = [Path(data_home).expanduser()] if data_home is not None else []
    if root is not None:
        homes.append(Path(root) / "rcv1")
    homes.append(Path(get_data_home()))
    return list(dict.fromkeys(homes))


def rcv1_cached_home(root: Path | None, data_home: str | Path | None = None) -> Path | None:
    """The first candidate folder holding scikit-learn's RCV1 cache (vectors and topics), or None."""
    for home in rcv1_homes(root, data_home):
        folder = home / "RCV1"
        if any(folder.glob("samples*.pkl")) and any(folder.glob("sample_topics*.pkl")):
            return home
    return None


def rcv1_part_rows(orientation: str, n: int, n_lewis_train: int = LEWIS_N_TRAIN) -> tuple[range, range]:
    """(train rows, test rows) of fetch_rcv1's row order, whose first ``n_lewis_train`` rows are Lewis' training part."""
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    if not 0 < n_lewis_train < n:
        raise ValueError(f"RCV1 data has {n} documents, too few for a {n_lewis_train}-document Lewis part")
    lewis_train, lewis_test = range(n_lewis_train), range(n_lewis_train, n)
    return (lewis_test, lewis_train) if orientation == "papers" else (lewis_train, lewis_test)


def rcv1_task(bunch: Any, topic: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """(X, y) for ``topic`` vs rest from a fetch_rcv1 Bunch, rows in fetch_rcv1's order. O(nnz)."""
    names = [str(t) for t in np.asarray(bunch.target_names)]
    if topic not in names:
        raise ValueError(f"topic {topic!r} not among the RCV1 target names ({len(names)} topics)")
    X = sp.csr_matrix(bunch.data, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    col = bunch.target[:, names.index(topic)]
    y = (np.asarray(col.toarray() if sp.issparse(col) else col).ravel() > 0).astype(np.int64)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"RCV1 target has {y.shape[0]} rows for {X.shape[0]} documents")
    return X, y


@lru_cache(maxsize=1)
def _task(home: str, download: bool, topic: str) -> tuple[sp.csr_matrix, np.ndarray]:
    from sklearn.datasets import fetch_rcv1

    bunch = fetch_rcv1(data_home=home, subset="all", download_if_missing=download)
    return rcv1_task(bunch, topic)


def load_rcv1_split(
    name: str,
    split: str,
    orientation: str | None = "papers",
    root: Path | None = None,
    cache: Any = True,
    *,
    download: bool = False,
    data_home: str | Path | None = None,
    vali_fraction: float = 0.05,
    holdout: bool = False,
    seed: int = 0,
    train_size: int | None = None,
) -> RankingData:
    """``split`` of the RCV1 task ``name`` (rcv1_ccat | rcv1_e311) as one-query RankingData.

    Reads scikit-learn's RCV1 cache from the first of ``rcv1_homes(root, data_home)``
    that holds it; downloads (about 650 MB) into the first candidate only when
    ``download=True``.  Raises DatasetNotFound when the data is absent.
    ``cache`` is accepted for symmetry with LETOR loaders: sklearn's pickles are the cache.
    """
    del cache
    spec = dataset_spec(name)
    orientation = orientation or "papers"
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    home = rcv1_cached_home(root, data_home)
    if home is None and download:
        home = rcv1_homes(root, data_home)[0]
    if home is None:
        raise DatasetNotFound(missing_message(spec, orientation, root))
    try:
        X, y = _task(str(home), bool(download), TOPICS[spec.name])
    except OSError as exc:
        raise DatasetNotFound(missing_message(spec, orientation, root) + f" ({exc})") from exc
    return _split(X, y, spec.name, split, orientation, vali_fraction, holdout, seed,
                  LEWIS_N_TRAIN, str(home), train_size)


def rcv1_split_from_bunch(
    bunch: Any,
    name: str,
    split: str,
    orientation: str = "papers",
    *,
    vali_fraction: float = 0.05,
    holdout: bool = False,
    seed: int = 0,
    n_lewis_train: int = LEWIS_N_TRAIN,
    source: str | None = None,
    train_size: int | None = None,
) -> RankingData:
    """One split of an RCV1 task built from a fetch_rcv1 Bunch (see the module docstring)."""
    if name not in TOPICS:
        raise ValueError(f"unknown RCV1 task {name!r}; known: {sorted(TOPICS)}")
    X, y = rcv1_task(bunch, TOPICS[name])
    return _split(X, y, name, split, orientation, vali_fraction, holdout, seed, n_lewis_train,
                  source, train_size)


def _split(X, y, name, split, orientation, vali_fraction, holdout, seed, n_lewis_train, source,
           train_size=None):
    if split not in ("train", "vali", "test"):
        raise ValueError(f"split must be train, vali or test, got {split!r}")
    train, test = rcv1_part_rows(orientation, y.shape[0], n_lewis_train)
    rows = single_query_rows(train, test, split, vali_fraction, bool(holdout), int(seed), train_size)
    ys = y[rows]
    meta = {"dataset": name, "topic": TOPICS[name], "orientation": orientation, "split": split,
            "fold": 1, "vali_fraction": vali_fraction, "holdout": holdout,
            "vali_in_train": split != "test" and not holdout, "train_size": train_size,
            "positive_rate": float(ys.mean()) if ys.size else 0.0}
    return one_query_data(X[rows], ys, name, synthetic=False, meta=meta, source=source)
