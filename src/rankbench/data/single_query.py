"""A LETOR data set as one binary AUC task: every document of a split in one query, labelled
relevant (label > 0) or not.  Sculley 2009's ROC-area experiment (Sect. 5) on the data present
here: the ranking methods and a class-weighted binary SVM see the same single-query problem.

The data sets ``ohsumed_one_query`` and ``mq2008_one_query`` (``ONE_QUERY_SOURCES``) are
registered here by name (``conf/dataset/<name>.yaml``); ``binary_single_query`` makes one of
any LETOR set.
"""

from __future__ import annotations

import numpy as np

from rankbench.data.ranking_data import RankingData
from rankbench.data.registry import register_dataset
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


def _one_query_loader(source: str):
    def loader(fold: int, split: str, seed: int = 0, variant: str | None = None,
               root: str | None = None) -> RankingData:
        return binary_single_query(fold, split, seed, variant, source, root)

    def available(variant: str | None = None, root: str | None = None) -> bool:
        from rankbench.data.registry import dataset_available

        return dataset_available(source, variant, root)

    loader.__name__ = f"{source}_one_query"
    loader.__doc__ = f"{source} as one binary query per split (see binary_single_query)."
    loader.available = available  # the harness asks before planning runs on it
    loader.source = source
    return loader


# registered by name (rankbench.data.registry.LOADERS reads this module on first use): a run
# names ``ohsumed_one_query``, never a path to code
ONE_QUERY_SOURCES = ("ohsumed", "mq2008")
for _source in ONE_QUERY_SOURCES:
    register_dataset(f"{_source}_one_query")(_one_query_loader(_source))
