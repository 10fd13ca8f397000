"""Display names: the papers' names for our solvers, so tables read like the papers."""

from __future__ import annotations

SOLVER_LABELS = {
    "prsvm": "PRSVM",
    "prsvm_plus": "PRSVM+",
    "tron_tree": "Tree-TRON",
    "newton_tree": "Newton-CG + tree oracle",
    "tron_counting": "TRON + counting oracle",
    "cutting_plane": "cutting plane (TreeRankSVM)",
    "sgd_queries": "SGD on queries (C&K Alg. 3)",
    "spd_pegasos": "SPD Pegasos",
    "spd_sgd_svm": "SPD SGD-SVM",
    "spd_pa1": "SPD Pass-Aggr (PA-I)",
    "spd_romma": "SPD ROMMA",
    "lambdamart_auc": "LambdaMART-AUC",
    "lambdamart_mauc": "LambdaMART-MAUC",
    "lambdamart_ndcg": "LambdaMART-NDCG",
    "lgbm_lambdarank": "LightGBM lambdarank",
    "auc_svm": "AUC-SVM (per-class RankSVM-AUC)",
}


def solver_label(name: str) -> str:
    """The display name of solver ``name`` (the name itself when unknown)."""
    return SOLVER_LABELS.get(name, name)
