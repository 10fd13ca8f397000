"""Data layer: readers, dataset registry, cache, synthetic generators, RankingData."""

from rankbench.data.ranking_data import RankingData, group_by_query

__all__ = ["RankingData", "group_by_query"]
