"""rankbench: fast pairwise learning to rank and AUC optimization, with reproducible experiments.

The estimators are imported lazily so ``import rankbench`` stays cheap (no numba compile).
"""

from importlib import import_module

from rankbench.parallel import shorten_openmp_spin

shorten_openmp_spin()  # before numba's OpenMP layer loads (its first parallel kernel)

__version__ = "0.1.0"

_LAZY = {
    "RankSVM": "rankbench.estimators.ranksvm",
    "SPDRanker": "rankbench.estimators.spd",
    "LambdaMART": "rankbench.estimators.lambdamart",
    "LightGBMLambdaRank": "rankbench.estimators.lambdamart",
    "XGBoostRanker": "rankbench.estimators.lambdamart",
    "AUCSVM": "rankbench.estimators.auc_svm",
    "KernelMap": "rankbench.estimators.kernel_map",
    "ranksvm_path": "rankbench.estimators.ranksvm",
    "RankSVMPath": "rankbench.estimators.ranksvm",
    "RankingData": "rankbench.data.ranking_data",
    "read_letor": "rankbench.data.letor",
    "ResultStore": "rankbench.store",
    "evaluate": "rankbench.metrics.evaluation",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rankbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
