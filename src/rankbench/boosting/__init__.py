"""LambdaMART machinery: lambda-gradients (NDCG, AUC, MAUC) in numba, LightGBM hooks, Welleck 2016 experiment.

- ``lambdas``: Delta-metric formulas and per-query lambda-gradient kernels.
- ``query_metrics``: per-query AUC / class AUC / MAUC / NDCG@k on grouped data (boosting eval).
- ``lightgbm_hook``: the custom objective, eval function and per-round recorder for LightGBM.
- ``welleck``: the experiment of Welleck (ECIR 2016), Tables 1-3 and Fig. 2, on MQ2008 / OHSUMED.
"""
