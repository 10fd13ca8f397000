"""Peer programs as solvers with rankbench's estimator API (fit / decision_function / coef_).

Each wrapper validates the data as every estimator does (``check_ranking_arrays``), writes it in
the program's format (SVM-light / LIBLINEAR: the LETOR line format ``label qid:Q i:v ...``) into
a temporary folder removed in every case, runs the program in its own process group with a
time limit (``timeout_s``, default ``DEFAULT_TIMEOUT_S`` = 4 h; ``rankbench.peers.process``),
reads the model back strictly (a malformed or non-finite entry is a ValueError naming the
model file and line) into a weight vector, and reports two times: ``fit_time_`` the program's own training
time where it prints one (SVM-light's "Runtime in cpu-seconds", which excludes reading the
file; for LIBLINEAR the clock rankbench's build wraps around its train() call), else the
process's wall time minus the time the same program takes to read the file and stop
(``read_time_``), and ``wall_total_s_`` the whole process.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from rankbench.data.ranking_data import check_ranking_arrays
from rankbench.estimators.registry import register_solver
from rankbench.peers import check_available, program
from rankbench.peers.models import read_liblinear_model, read_sofia_model, read_svmlight_model
from rankbench.peers.process import DEFAULT_TIMEOUT_S, peer_folder, resolve_timeout, run_peer


def write_letor(path: Path, X: Any, y: Any, qid: Any) -> None:
    """``label qid:Q i:v ...`` lines (1-based feature indices, zeros left out), grouped by query."""
    y = np.asarray(y)
    qid = np.zeros(y.shape[0], dtype=np.int64) if qid is None else np.asarray(qid)
    order = np.argsort(qid, kind="stable")
    X = sp.csr_matrix(X)
    with path.open("w") as fh:
        for i in order:
            a, b = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in zip(X.indices[a:b].tolist(),
                                                               X.data[a:b].tolist(), strict=True))
            fh.write(f"{int(y[i])} qid:{int(qid[i])} {feats}\n")


class _Peer(BaseEstimator):
    peer = ""

    def _inputs(self, X: Any, y: Any, qid: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        """(X, y, qid) validated as every estimator's fit does (NaN or fractional qids, labels
        beyond MAX_LABEL, NaN in X: ValueError); qids that are not integers numbered 0, 1, ..."""
        X, y, qid = check_ranking_arrays(X, y, qid)
        if qid.dtype.kind not in "iu":
            qid = np.unique(qid, return_inverse=True)[1].ravel()
        return X, y, qid

    def _set_objective(self, X: Any, y: Any, qid: Any, loss: str) -> None:
        """``objective_``: Chapelle eq. (1) at the peer's w, evaluated by our tree oracle (the same
        function our RankSVM minimizes), so peer and ours are compared on one objective."""
        from rankbench.data.row_order import group_by_query
        from rankbench.objective import ranksvm_objective

        y = np.asarray(y, dtype=np.float64)
        qid = np.zeros(y.shape[0], dtype=np.int64) if qid is None else np.asarray(qid)
        order, ptr = group_by_query(qid)
        if order is not None:
            X, y = X[order], y[order]
        self.objective_ = float(ranksvm_objective(self.coef_, X, y, ptr, C=float(self.C), loss=loss))

    def decision_function(self, X: Any) -> np.ndarray:
        return np.asarray(X @ self.coef_, dtype=float).ravel()

    def fit_report(self):
        """What the last fit tells the harness (``rankbench.estimators.fit_report``)."""
        from rankbench.estimators.fit_report import report_of

        return report_of(self)

    def check_params(self) -> None:
        """ValueError for a parameter no run could use (numbers that must be positive)."""
        for k in ("C", "lam", "tol", "timeout_s"):
            v = getattr(self, k, None)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                                  or not np.isfinite(v) or v <= 0):
                raise ValueError(f"{k} must be a positive finite number, got {v!r}")
        for k in ("max_iter", "n_iter"):
            v = getattr(self, k, None)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{k} must be an integer >= 1, got {v!r}")

    @staticmethod
    def _run(cmd: list[str], timeout_s: float, both: bool = False) -> tuple[str, float]:
        """Run ``cmd`` within ``timeout_s`` (``run_peer``); (stdout, or stdout + stderr with ``both``; wall s)."""
        out, err, wall = run_peer(cmd, timeout_s)
        return (out + err if both else out), wall


@register_solver("svmlight")
def _make_svmlight(params: dict[str, Any]) -> SVMLightRanker:
    return SVMLightRanker(**params)


class SVMLightRanker(_Peer):
    """SVM-light V6.02 ranking mode: min 1/2 ||w||^2 + C sum over preference pairs of the hinge
    (the same C as rankbench's hinge RankSVM: SVM-light's -c is the weight of each pair's
    slack).  ``max_iter`` is ``-#``: stop when there was no progress for that many iterations
    (LETOR's SVMLight#: 5000; SVM-light's default 100000); ``tol`` is ``-e`` (default 0.001).
    After fit: ``coef_``, ``fit_time_`` (SVM-light's own CPU-seconds of training),
    ``wall_total_s_``, ``converged_`` (False when SVM-light says it stopped for lack of
    progress), ``n_iter_``, ``n_support_``.  ``timeout_s``: seconds before the program is killed
    (TimeoutError); None means ``DEFAULT_TIMEOUT_S``."""

    peer = "svmlight"

    def __init__(self, C: float = 1.0, max_iter: int | None = None, tol: float = 1e-3,
                 timeout_s: float | None = DEFAULT_TIMEOUT_S, verbose: bool = False):
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.timeout_s = timeout_s
        self.verbose = verbose

    def fit(self, X: Any, y: Any, qid: Any = None) -> SVMLightRanker:
        X, y, qid = self._inputs(X, y, qid)
        timeout_s = resolve_timeout(self.timeout_s, "svmlight")
        check_available("svmlight")
        n_features = X.shape[1]
        with peer_folder("svmlight") as tmp:
            train, model = tmp / "train.dat", tmp / "model"
            write_letor(train, X, y, qid)
            cmd = [str(program("svmlight")), "-z", "p", "-c", repr(float(self.C)), "-e", repr(float(1e-3 if self.tol is None else self.tol))]
            if self.max_iter is not None:
                cmd += ["-#", str(int(self.max_iter))]
            out, wall = self._run([*cmd, str(train), str(model)], timeout_s)
            self.coef_ = read_svmlight_model(model, n_features)
        m = re.search(r"Runtime in cpu-seconds: ([0-9.]+)", out)
        self.fit_time_ = float(m.group(1)) if m else wall
        self.wall_total_s_ = wall
        self.converged_ = "Relaxing KT-Conditions due to slow progress" not in out
        it = re.findall(r"\((\d+) iterations\)", out)
        self.n_iter_ = int(it[-1]) if it else None
        sv = re.search(r"Number of SV: (\d+)", out)
        self.n_support_ = int(sv.group(1)) if sv else None
        self.log_ = out[-4000:]
        self._set_objective(X, y, qid, "hinge")
        self.extra_ = {"peer": "svm_learn (SVM-light V6.02)", "peer_cpu_s": self.fit_time_,
                       "peer_wall_total_s": wall, "converged": self.converged_}
        return self


@register_solver("liblinear_ranksvm")
def _make_liblinear(params: dict[str, Any]) -> LiblinearRankSVM:
    return LiblinearRankSVM(**params)


class LiblinearRankSVM(_Peer):
    """LIBLINEAR 2.11's ranksvm (``train -s 8``, Lee & Lin's C++ Tree-TRON): min 1/2 ||w||^2 +
    C sum over preference pairs of max(0, 1 - w.(x_i - x_j))^2, stopping at ||g|| <= tol ||g0||
    (``-e``, default 1e-3, LIBLINEAR's).  ``fit_time_`` is LIBLINEAR's ``train()`` call alone,
    from the monotonic clock ``make peers`` wraps around it (``peers.build.LIBLINEAR_TIMER``;
    ``timed_by_ = "train() clock"``), and ``read_time_`` the rest of the process (reading the
    file, writing the model).  A ``train`` built without that timer (no timer line in its
    output) is timed as before: wall time minus ``read_time_``, the time the same program takes
    on the same file with ``-e`` so large it stops after reading (``timed_by_ = "wall minus
    parse run"``).  ``timeout_s``: seconds before either run is killed (TimeoutError); None
    means ``DEFAULT_TIMEOUT_S``."""

    peer = "liblinear"

    def __init__(self, C: float = 1.0, tol: float = 1e-3, timeout_s: float | None = DEFAULT_TIMEOUT_S,
                 verbose: bool = False):
        self.C = C
        self.tol = tol
        self.timeout_s = timeout_s
        self.verbose = verbose

    def fit(self, X: Any, y: Any, qid: Any = None) -> LiblinearRankSVM:
        X, y, qid = self._inputs(X, y, qid)
        timeout_s = resolve_timeout(self.timeout_s, "liblinear_ranksvm")
        check_available("liblinear")
        n_features = X.shape[1]
        train_bin = str(program("liblinear"))
        with peer_folder("liblinear") as tmp:
            train, model = tmp / "train.dat", tmp / "model"
            write_letor(train, X, y, qid)
            out, wall = self._run([train_bin, "-s", "8", "-c", repr(float(self.C)), "-e",
                                   repr(float(1e-3 if self.tol is None else self.tol)), str(train), str(model)], timeout_s)
            self.coef_ = read_liblinear_model(model, n_features)
            train_s = liblinear_train_seconds(out)
            if train_s is not None:
                self.fit_time_ = train_s
                self.read_time_ = max(wall - self.fit_time_, 0.0)
                self.timed_by_ = TIMED_BY_CLOCK
            else:  # a train built without rankbench's timer
                self.read_time_ = liblinear_read_time(train, self.C, timeout_s, tmp / "model-read")
                self.fit_time_ = max(wall - self.read_time_, 0.0)
                self.timed_by_ = TIMED_BY_PARSE_RUN
        self.wall_total_s_ = wall
        it = re.findall(r"iter\s+(\d+)", out)
        self.n_iter_ = int(it[-1]) if it else None
        cg = re.findall(r"CG\s+(\d+)", out)
        self.n_cg_iter_ = int(sum(int(c) for c in cg)) if cg else None
        self.log_ = out[-4000:]
        self._set_objective(X, y, qid, "squared_hinge")
        self.extra_ = {"peer": "liblinear-ranksvm 2.11 train -s 8", "peer_wall_total_s": wall,
                       "peer_read_s": self.read_time_, "peer_timed_by": self.timed_by_}
        return self


# the line rankbench's timer adds to LIBLINEAR's output (rankbench.peers.build.LIBLINEAR_TIMER)
LIBLINEAR_TIMER_RE = re.compile(r"^rankbench timer: train\(\) ([0-9.eE+-]+) s$", re.MULTILINE)
# LiblinearRankSVM.timed_by_: its train() clock, or (a train without it) wall minus a parse run
TIMED_BY_CLOCK = "train() clock"
TIMED_BY_PARSE_RUN = "wall minus parse run"


def liblinear_train_seconds(log: str) -> float | None:
    """The seconds of LIBLINEAR's train() call printed by rankbench's timer in ``log`` (its last
    such line), or None when ``log`` has none (a train built without the timer)."""
    timer = LIBLINEAR_TIMER_RE.findall(log)
    return float(timer[-1]) if timer else None


def liblinear_read_time(train: Path, C: float = 1.0, timeout_s: float | None = None,
                        model: Path | None = None) -> float:
    """Wall seconds of LIBLINEAR ranksvm (``train -s 8``) reading ``train`` and stopping at once
    (``-e 1e30``: its train() evaluates f and g at w = 0 and stops): its parse time, less that
    train() call where rankbench's timer prints it (``LiblinearRankSVM`` subtracts this from its
    wall time when its train has no timer)."""
    timeout_s = resolve_timeout(timeout_s, "liblinear_ranksvm")
    check_available("liblinear")
    with peer_folder("liblinear") as tmp:
        out = model if model is not None else tmp / "model"
        log, read = _Peer._run([str(program("liblinear")), "-s", "8", "-c", repr(float(C)), "-e", "1e30",
                                str(train), str(out)], timeout_s)
    train_s = liblinear_train_seconds(log)
    return read if train_s is None else max(read - train_s, 0.0)


# rankbench SPD learner -> sofia-ml --learner_type (the plain perceptron is sofia-ml's
# margin-perceptron with margin 0)
SOFIA_LEARNERS = {"pegasos": "pegasos", "sgd_svm": "sgd-svm", "pa1": "passive-aggressive",
                  "romma": "romma", "margin_perceptron": "margin-perceptron",
                  "perceptron": "margin-perceptron"}


@register_solver("sofia_ml")
def _make_sofia(params: dict[str, Any]) -> SofiaML:
    return SofiaML(**params)


class SofiaML(_Peer):
    """sofia-ml (Sculley 2009) with ``--loop_type rank``: Stochastic Pairwise Descent over
    pairs drawn within queries, the program our ``spd_*`` solvers reimplement.  Parameters
    as ``SPDRanker``'s: ``learner`` (pegasos, sgd_svm, pa1, romma, margin_perceptron,
    perceptron), ``lam`` (``--lambda``), ``n_iter`` (``--iterations``), ``C`` (PA-I's
    ``--passive_aggressive_c``), ``margin`` (``--perceptron_margin_size``), ``eta``
    (``--eta_type``), ``random_state`` (``--random_seed``).  ``fit_time_`` is the program's
    own "Time to complete training" (excludes reading the file); ``read_time_`` its "Time to
    read training data"; ``wall_total_s_`` the whole process.  The model's bias weight (sofia's
    feature 0) is dropped: a ranking does not depend on it.  ``timeout_s``: seconds before the
    program is killed (TimeoutError); None means ``DEFAULT_TIMEOUT_S``."""

    peer = "sofia"

    def __init__(self, learner: str = "pegasos", lam: float = 1e-3, n_iter: int = 100_000,
                 C: float = 1.0, margin: float = 1.0, eta: str = "pegasos",
                 random_state: int | None = 0, timeout_s: float | None = DEFAULT_TIMEOUT_S,
                 verbose: bool = False):
        self.learner = learner
        self.lam = lam
        self.n_iter = n_iter
        self.C = C
        self.margin = margin
        self.eta = eta
        self.random_state = random_state
        self.timeout_s = timeout_s
        self.verbose = verbose

    def fit(self, X: Any, y: Any, qid: Any = None) -> SofiaML:
        if self.learner not in SOFIA_LEARNERS:
            raise ValueError(f"sofia_ml: learner {self.learner!r} is not one of {sorted(SOFIA_LEARNERS)}")
        if self.eta not in ("pegasos", "basic", "constant"):
            raise ValueError(f"sofia_ml: eta {self.eta!r} is not one of pegasos, basic, constant")
        X, y, qid = self._inputs(X, y, qid)
        timeout_s = resolve_timeout(self.timeout_s, "sofia_ml")
        check_available("sofia")
        n_features = X.shape[1]
        seed = 0 if self.random_state is None else int(self.random_state)
        with peer_folder("sofia") as tmp:
            train, model = tmp / "train.dat", tmp / "model"
            write_letor(train, X, y, qid)
            cmd = [str(program("sofia")), "--learner_type", SOFIA_LEARNERS[self.learner],
                   "--loop_type", "rank", "--lambda", repr(float(self.lam)),
                   "--iterations", str(int(self.n_iter)), "--eta_type", self.eta,
                   "--random_seed", str(seed), "--dimensionality", str(n_features + 1),
                   "--training_file", str(train), "--model_out", str(model)]
            if self.learner == "pa1":
                cmd += ["--passive_aggressive_c", repr(float(self.C))]
            if self.learner in ("margin_perceptron", "perceptron"):
                margin = 0.0 if self.learner == "perceptron" else float(self.margin)
                cmd += ["--perceptron_margin_size", repr(margin)]
            out, wall = self._run(cmd, timeout_s, both=True)
            self.coef_ = read_sofia_model(model, n_features)
        t = re.search(r"Time to complete training: ([0-9.eE+-]+)", out)
        r = re.search(r"Time to read training data: ([0-9.eE+-]+)", out)
        self.fit_time_ = float(t.group(1)) if t else wall
        self.read_time_ = float(r.group(1)) if r else None
        self.wall_total_s_ = wall
        self.n_iter_ = int(self.n_iter)
        self.log_ = out[-4000:]
        self.extra_ = {"peer": "sofia-ml --loop_type rank", "peer_wall_total_s": wall,
                       "peer_read_s": self.read_time_}
        return self


@register_solver("liblinear_pairs")
def _make_liblinear_pairs(params: dict[str, Any]) -> LiblinearPairs:
    return LiblinearPairs(**params)


class LiblinearPairs(_Peer):
    """Chapelle & Keerthi's footnote 2: an ordinary linear SVM on explicit difference vectors.
    ``liblinear-official`` (the package index's LIBLINEAR) solves the L2-loss primal
    (``-s 2``, no bias) on x_i - x_j labelled +1 and x_j - x_i labelled -1 for every
    preference pair (y_i > y_j, same query) with cost C/2, which is exactly
    1/2 ||w||^2 + C sum_pairs max(0, 1 - w.(x_i - x_j))^2, our squared-hinge RankSVM
    (``loss="hinge"``: the L1-loss dual ``-s 3``).  Materializing the O(p) pairs is the
    method, so it is for small problems.  ``fit_time_``: LIBLINEAR's train call alone
    (pairs built beforehand, timed apart in ``pairs_time_``)."""

    peer = "liblinear_pairs"

    def __init__(self, C: float = 1.0, loss: str = "squared_hinge", tol: float = 1e-3,
                 max_pairs: int = 5_000_000, verbose: bool = False):
        self.C = C
        self.loss = loss
        self.tol = tol
        self.max_pairs = max_pairs
        self.verbose = verbose

    def fit(self, X: Any, y: Any, qid: Any = None) -> LiblinearPairs:
        try:
            from liblinear.liblinearutil import parameter, problem, train
        except ImportError:
            from rankbench.estimators.registry import SolverUnavailable

            raise SolverUnavailable("liblinear_pairs needs liblinear-official (pip install "
                                    "liblinear-official; make peers installs it)") from None
        if self.loss not in ("squared_hinge", "hinge"):
            raise ValueError(f"liblinear_pairs: loss {self.loss!r} is not squared_hinge or hinge")
        X, y, qid = self._inputs(X, y, qid)
        from rankbench.data.row_order import group_by_query
        from rankbench.objective import count_pairs
        from rankbench.objective.explicit_pairs import build_pairs

        t0 = time.perf_counter()
        y = np.asarray(y, dtype=np.float64)
        qid = np.zeros(y.shape[0], dtype=np.int64) if qid is None else np.asarray(qid)
        order, ptr = group_by_query(qid)
        order = np.arange(y.shape[0]) if order is None else order
        n_pairs = count_pairs(y[order], ptr)
        if n_pairs > self.max_pairs:
            raise ValueError(f"liblinear_pairs: {n_pairs} preference pairs exceed max_pairs="
                             f"{self.max_pairs} (the explicit pair matrix is the method; raise it knowingly)")
        hi, lo = build_pairs(y[order], ptr, n_pairs)
        hi, lo = order[hi], order[lo]
        if hi.shape[0] == 0:
            raise ValueError("liblinear_pairs: no preference pairs (every query has one label)")
        X = sp.csr_matrix(X, dtype=np.float64)
        D = (X[hi] - X[lo]).tocsr()
        P = sp.vstack([D, -D]).tocsr()
        labels = np.concatenate([np.ones(D.shape[0]), -np.ones(D.shape[0])])
        self.pairs_time_ = time.perf_counter() - t0
        solver = 2 if self.loss == "squared_hinge" else 3
        prob = problem(labels, P)
        param = parameter(f"-s {solver} -c {float(self.C) / 2!r} -e {float(self.tol)!r} -B -1 -q")
        t = time.perf_counter()
        model = train(prob, param)
        self.fit_time_ = time.perf_counter() - t
        self.wall_total_s_ = self.pairs_time_ + self.fit_time_
        w = np.array([model.w[j] for j in range(model.nr_feature)])
        # LIBLINEAR orders classes as first seen: +1 first here, so w scores +1 (the higher label)
        if list(model.get_labels()) != [1, -1]:
            w = -w
        self.coef_ = np.concatenate([w, np.zeros(X.shape[1] - w.shape[0])])
        self.n_pairs_ = int(hi.shape[0])
        self._set_objective(X, y, qid, self.loss)
        self.extra_ = {"peer": f"liblinear-official train -s {solver} on difference vectors",
                       "pairs": self.n_pairs_, "pairs_time_s": self.pairs_time_}
        return self
