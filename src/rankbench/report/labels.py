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
    "spd_perceptron": "SPD Perceptron",
    "spd_margin_perceptron": "SPD Perceptron with margins",
    "svmlight": "SVM-light",
    "liblinear_pairs": "LIBLINEAR on difference vectors",
    "class_weighted_svm": "class-weighted binary SVM",
    "lambdamart_auc": "LambdaMART-AUC",
    "lambdamart_mauc": "LambdaMART-MAUC",
    "lambdamart_ndcg": "LambdaMART-NDCG",
    "lgbm_lambdarank": "LightGBM lambdarank",
    "auc_svm": "AUC-SVM (per-class RankSVM-AUC)",
}


def solver_label(name: str) -> str:
    """The display name of solver ``name`` (the name itself when unknown)."""
    return SOLVER_LABELS.get(name, name)


def data_title(res) -> str:
    """What a figure's data is, for its title: the dataset's name, or for a stand-in what was
    loaded and what it stands in for ('OHSUMED, standing in for HP2003'; 'synthetic stand-in
    for RCV1 CCAT')."""
    if not getattr(res, "substitution", None):
        return res.label
    loaded = (res.dataset or "").lower()
    if not loaded or loaded == "synthetic" or loaded == res.key:
        return f"synthetic stand-in for {res.label}"
    return f"{loaded.upper()}, standing in for {res.label}"
