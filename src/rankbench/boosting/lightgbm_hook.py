"""LightGBM custom-objective and eval hooks that plug our lambda-gradients into its tree booster."""

from __future__ import annotations

import time

import numpy as np

from rankbench.boosting.lambdas import _exact_flag, _lambda_gradients, lambda_gradients, metric_code
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
        # Every argument check of lambda_gradients, once (it raises the same ValueErrors), so
        # a round only checks the scores and runs the kernel into these two buffers
        # (LightGBM copies them to float32 at once, so reusing them is safe).
        n = self.y.shape[0]
        self.grad, self.hess = lambda_gradients(np.zeros(n), self.y, self.query_ptr, metric, self.k,
                                                self.sigma, self.norm, mauc_delta, ndcg_delta)
        self._code = metric_code(metric)
        self._exact = _exact_flag(self._code, mauc_delta, ndcg_delta)

    def __deepcopy__(self, memo) -> LambdaObjective:
        # lightgbm.train deep-copies params; keep one instance so the timings reach us
        return self

    def __call__(self, preds: np.ndarray, train_data) -> tuple[np.ndarray, np.ndarray]:
        """Gradients and Hessians for LightGBM's current scores; returns the reused buffers."""
        t0 = time.perf_counter()
        if preds.shape != self.y.shape:
            raise ValueError(f"LightGBM passed {preds.shape[0]} scores for {self.y.shape[0]} documents")
        s = np.ascontiguousarray(preds, dtype=np.float64)
        if not np.isfinite(s).all():
            raise ValueError("LightGBM passed scores with NaN or inf")
        _lambda_gradients(s, self.y, self.query_ptr, self._code, self.k, self.sigma, self.norm,
                          self._exact, self.grad, self.hess)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return self.grad, self.hess


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

    def __init__(self, objective: LambdaObjective | None = None, on_row=None):
        self.rows: list[dict] = []
        self.objective = objective
        self.on_row = on_row  # called with each new row (verbose progress)
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
        if self.on_row is not None:
            self.on_row(row)
        self._last = time.perf_counter()


class NativeFatalFilter:
    """Context manager holding back LightGBM's native ``[LightGBM] [Fatal]`` lines on fd 2.

    LightGBM's C++ code writes ``[Fatal]`` lines straight to the process's stderr before it
    raises; when the caller turns that error into its own clear ValueError, those lines are
    noise ahead of the real message.  Inside the block fd 2 is a pipe read by a thread that
    forwards every other line to the real stderr as it arrives (progress and warnings keep
    flowing) and keeps the ``[Fatal]`` lines (and the blank line LightGBM adds) in ``held``.
    After the block, ``release()`` writes the held lines to stderr (the caller does so when
    it does not replace the error); otherwise they are dropped.
    """

    _MARK = b"[LightGBM] [Fatal]"

    def __init__(self) -> None:
        self.held: list[bytes] = []
        self._saved = -1

    def __enter__(self) -> NativeFatalFilter:
        import os
        import sys
        import threading

        sys.stderr.flush()
        self._saved = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)

        def pump() -> None:
            buf = b""
            after_fatal = False
            while True:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if self._MARK in line or (after_fatal and not line.strip()):
                        self.held.append(line + b"\n")
                        after_fatal = self._MARK in line
                    else:
                        after_fatal = False
                        os.write(self._saved, line + b"\n")
            if buf:
                os.write(self._saved, buf)
            os.close(r)

        self._thread = threading.Thread(target=pump, name="lightgbm-stderr", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        import os
        import sys

        sys.stderr.flush()
        os.dup2(self._saved, 2)  # closes the pipe's last write end: the pump sees EOF
        self._thread.join()
        os.close(self._saved)

    def release(self) -> None:
        """Write the held lines to stderr (when the native error is not replaced)."""
        import os

        for line in self.held:
            os.write(2, line)
        self.held = []
