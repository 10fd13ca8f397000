"""rankbench: fast pairwise learning to rank and AUC optimization, with reproducible experiments.

The estimators are imported lazily so ``import rankbench`` stays cheap (no numba compile).
"""

from importlib import import_module

__version__ = "0.1.0"

_LAZY = {
    "RankSVM": "rankbench.estimators.ranksvm",
    "SPDRanker": "rankbench.estimators.spd",
    "LambdaMART": "rankbench.estimators.lambdamart",
    "RankingData": "rankbench.data.ranking_data",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rankbench' has no attribute {name!r}")
