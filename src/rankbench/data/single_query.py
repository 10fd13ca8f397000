"""A LETOR data set as one binary AUC task: every document of a split in one query, labelled
relevant (label > 0) or not.  Sculley 2009's ROC-area experiment (Sect. 5) on the data present
here: the ranking methods and a class-weighted binary SVM see the same single-query problem.

Use it as a dataset's ``loader``: ``rankbench.data.single_query:of_ohsumed`` reads OHSUMED
(``of_<name>`` for any registered LETOR set; the runner calls the loader with the run's fold,
split, seed and variant, and the data root comes from RANKBENCH_DATA).
"""

from __future__ import annotations

import numpy as np

from rankbench.data.ranking_data import RankingData
from rankbench.data.synthetic import one_query_data


def binary_single_query(fold: int, split: str, seed: int = 0, variant: str | None = None,
                        source: str | None = None, root: str | None = None) -> RankingData:
    """Split ``split`` of ``source``'s fold ``fold`` as one query with labels 1 (label > 0) / 0."""
    from rankbench.data import load_fold

    if not source:
        raise ValueError("binary_single_query needs data_params.source: the LETOR set to read")
    data = load_fold(source, fold, split, variant=variant, root=root)
    y = (np.asarray(data.y) > 0).astype(np.int64)
    return one_query_data(data.X, y, f"{data.name} (one query, relevant = label > 0)",
                          synthetic=data.synthetic,
                          meta={"fold": fold, "split": split, "variant": variant,
                                "single_query_of": source}, source=getattr(data, "source", None))


def __getattr__(name: str):
    """``of_<dataset>``: the loader of that data set as one binary query (PEP 562)."""
    if name.startswith("of_") and len(name) > 3:
        source = name[3:]

        def loader(fold: int, split: str, seed: int = 0, variant: str | None = None,
                   root: str | None = None) -> RankingData:
            return binary_single_query(fold, split, seed, variant, source, root)

        loader.__name__ = name
        loader.__doc__ = f"{source} as one binary query per split (see binary_single_query)."
        return loader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
