"""LightGBM custom-objective and eval hooks that plug our lambda-gradients into its tree booster."""

from __future__ import annotations

import time

import numpy as np

from rankbench.boosting.lambdas import lambda_gradients
from rankbench.boosting.query_metrics import mean_query_metric


class LambdaObjective:
    """Callable ``(preds, train_data) -> (grad, hess)`` for ``params["objective"]`` (LightGBM 4).

    Holds the training labels and query boundaries (LightGBM hands us only the scores)
    and accumulates the seconds spent computing gradients in ``seconds``.
    """

    def __init__(self, y: np.ndarray, query_ptr: np.ndarray, metric: str, k: int,
                 sigma: float, norm: bool, mauc_delta: str, ndcg_delta: str = "lightgbm"):
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.query_ptr = np.ascontiguousarray(query_ptr, dtype=np.int64)
        self.metric, self.k, self.sigma = metric, int(k), float(sigma)
        self.norm, self.mauc_delta, self.ndcg_delta = bool(norm), mauc_delta, ndcg_delta
        self.seconds = 0.0
        self.calls = 0

    def __deepcopy__(self, memo) -> LambdaObjective:
        # lightgbm.train deep-copies params; keep one instance so the timings reach us
        return self

    def __call__(self, preds: np.ndarray, train_data) -> tuple[np.ndarray, np.ndarray]:
        t0 = time.perf_counter()
        if preds.shape[0] != self.y.shape[0]:
            raise ValueError(f"LightGBM passed {preds.shape[0]} scores for {self.y.shape[0]} documents")
        grad, hess = lambda_gradients(preds, self.y, self.query_ptr, self.metric, self.k,
                                      self.sigma, self.norm, self.mauc_delta, self.ndcg_delta)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return grad, hess


class QueryMetricEval:
    """``feval(preds, eval_data) -> (name, value, True)``: mean per-query metric on one eval set."""

    def __init__(self, y: np.ndarray, query_ptr: np.ndarray, metric: str, k: int):
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.query_ptr = np.ascontiguousarray(query_ptr, dtype=np.int64)
        self.metric, self.k = metric, int(k)
        self.name = f"{metric}@{k}" if metric == "ndcg" else metric

    def __call__(self, preds: np.ndarray, eval_data) -> tuple[str, float, bool]:
        return self.name, mean_query_metric(preds, self.y, self.query_ptr, self.metric, self.k), True


class RoundRecorder:
    """LightGBM callback: one history row per boosting round (wall seconds, eval values)."""

    order = 30  # after LightGBM's own record/early-stopping callbacks

    def __init__(self, objective: LambdaObjective | None = None):
        self.rows: list[dict] = []
        self.objective = objective
        self._last = time.perf_counter()
        self._last_obj = 0.0

    def start(self) -> None:
        """Reset the clock right before training starts."""
        self._last = time.perf_counter()
        self._last_obj = 0.0

    def __call__(self, env) -> None:
        now = time.perf_counter()
        row = {"iteration": env.iteration + 1, "round_s": now - self._last}
        if self.objective is not None:
            row["gradient_s"] = self.objective.seconds - self._last_obj
            self._last_obj = self.objective.seconds
        for data_name, name, value, _ in env.evaluation_result_list or []:
            row[f"{data_name}.{name}"] = float(value)
        self.rows.append(row)
        self._last = time.perf_counter()
