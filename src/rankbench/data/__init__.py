"""Data layer: readers, dataset registry, cache, synthetic generators, RankingData."""

from rankbench.data.letor import read_letor, write_letor
from rankbench.data.normalize import normalize_query_level
from rankbench.data.ranking_data import RankingData, group_by_query
from rankbench.data.registry import (
    DatasetNotFound,
    dataset_available,
    dataset_info,
    list_datasets,
    load_fold,
    register_dataset,
)
from rankbench.data.synthetic import make_letor_like, make_rcv1_like

__all__ = [
    "DatasetNotFound",
    "RankingData",
    "dataset_available",
    "dataset_info",
    "group_by_query",
    "list_datasets",
    "load_fold",
    "make_letor_like",
    "make_rcv1_like",
    "normalize_query_level",
    "read_letor",
    "register_dataset",
    "write_letor",
]
