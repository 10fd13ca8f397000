"""SPD benchmarks (Sculley 2009): step speed and convergence to the optimum.

Cases (rows of ``run``; ``seconds`` is wall time, ``cpu_seconds`` process CPU time, both
with numba compilation excluded and the sampling index included):

- ``ohsumed_fold1_1e5``: 100,000 steps on OHSUMED QueryLevelNorm Fold1 train, per learner
  (the paper: 0.2-0.3 CPU s per LETOR task with sofia-ml).
- ``ohsumed_fold1_1e8``: 10^8 Pegasos steps (10^6 with ``quick``).
- ``rcv1_like_1e5``: 100,000 steps on a synthetic sparse problem shaped like RCV1 E311
  (781,265 x 47,236, ~75 non-zeros per row, 0.2% positive; one query), per sampler.
- ``optimum_ohsumed_fold1``: Pegasos with the exact-uniform sampler after 10^7 steps
  against the cutting-plane hinge RankSVM at C = 1/(lambda |P|).
- ``target/...`` (issue 14, first rows): 1e5 Pegasos steps with the sampling index built
  (paper's ``indexed`` sampler, and ``sofia``) against the 10 ms target, and ours / sofia-ml
  for 1e7 steps of the same rank loop (``sofia`` sampler) against the 0.25 target.  Each
  shows the reference beside ours and their ratio; ours and sofia-ml run interleaved and the
  minimum over the repeats is kept.  sofia-ml times itself with ``clock()`` (process CPU
  time), so the row states ours in CPU seconds too (``ratio_cpu``: like for like on a
  loaded machine) beside the wall-clock ratio.

The papers' LETOR MAP comparison (Fig. 1) and convergence curves (Fig. 2), with model
selection by ``rankbench.selection``, are experiments, not benchmarks:
``rankbench -m experiment=sculley2009/fig1`` and ``.../fig2`` (``make reproduce``).
"""

from __future__ import annotations

import time

import numpy as np

from rankbench.bench import PARTS
from rankbench.estimators.spd import SPDRanker
from rankbench.optim.samplers import build_pair_index
from rankbench.optim.spd import SPDState, prepare_X, run_segment
from rankbench.peers import built

PART = "spd"
SOFIA_LEARNERS = ("pegasos", "sgd_svm", "pa1", "romma")  # sofia-ml's perceptron rank step differs
LEARNERS = ("pegasos", "sgd_svm", "pa1", "romma", "perceptron", "margin_perceptron")


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(min wall seconds, min CPU seconds) of ``fn()`` over ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def spd_steps_seconds(X, y, query_ptr, n_steps: int, learner: str = "pegasos",
                      sampler: str = "indexed", lam: float = 1e-3, repeats: int = 5
                      ) -> tuple[float, float]:
    """Wall and CPU seconds (best of ``repeats``) of index construction + ``n_steps`` SPD steps."""
    Xk = prepare_X(X)

    def once():
        index = build_pair_index(y, query_ptr)
        run_segment(Xk, index, SPDState.start(Xk.shape[1], 0), n_steps, learner, lam, 0.01, sampler)

    run_segment(Xk, build_pair_index(y, query_ptr), SPDState.start(Xk.shape[1], 0), 10, learner,
                lam, 0.01, sampler)  # compile / load outside the timing
    return _timed(once, repeats)


TARGET_1E5_S = 0.010  # issue 14: 1e5 Pegasos steps on OHSUMED Fold1, index included
TARGET_VS_SOFIA = 0.25  # issue 14: ours / sofia-ml at 1e7 steps


def target_rows(quick: bool) -> list[dict]:
    """Issue 14's two SPD speed targets, each beside its reference with the ratio."""
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED"):
        print("[spd] OHSUMED not under RANKBENCH_DATA: target rows skipped")
        return []
    tr = load_fold("OHSUMED", 1, "train")
    rows = []
    samplers = ("indexed", "sofia")
    # interleaved, 3 rounds of 20 repeats per sampler (about a second in all): this VM runs
    # a process 1.5-2x slower for seconds at a time, and 20 back-to-back repeats of 9 ms fit
    # inside one such stretch (at 796c73be the first sampler read 11.4 ms that way, 8.3 ms
    # measured alone afterwards); interleaved, both samplers see the same stretches
    best = {s: (float("inf"), float("inf")) for s in samplers}
    for _ in range(3):
        for sampler in samplers:
            wall, cpu = spd_steps_seconds(tr.X, tr.y, tr.query_ptr, 100_000, "pegasos", sampler,
                                          repeats=20)
            best[sampler] = (min(best[sampler][0], wall), min(best[sampler][1], cpu))
    for sampler in samplers:
        wall, cpu = best[sampler]
        rows.append(_row("target/1e5 pegasos steps incl. index", wall, cpu_seconds=cpu,
                         learner="pegasos", sampler=sampler, n_steps=100_000,
                         reference="target 10 ms", reference_s=TARGET_1E5_S,
                         ratio=wall / TARGET_1E5_S, ratio_cpu=cpu / TARGET_1E5_S, target_ratio=1.0,
                         meets_target_cpu=bool(cpu <= TARGET_1E5_S),
                         timing="rough: min over 3 interleaved rounds of 20 repeats"))
    if not built("sofia"):
        rows.append({"part": PART, "case": "target/ours vs sofia-ml", "seconds": float("nan"),
                     "note": "sofia-ml not built: make peers"})
        return rows
    from rankbench.peers.solvers import SofiaML

    n = 10**6 if quick else 10**7
    Xk = prepare_X(tr.X)
    run_segment(Xk, build_pair_index(tr.y, tr.query_ptr), SPDState.start(Xk.shape[1], 0), 10,
                "pegasos", 1e-3, 0.01, "sofia")  # compile / load outside the timing
    walls, cpus, peers = [], [], []
    for _ in range(2 if quick else 3):  # interleaved: ours, sofia-ml, ours, ...
        w, c = time.perf_counter(), time.process_time()
        run_segment(Xk, build_pair_index(tr.y, tr.query_ptr), SPDState.start(Xk.shape[1], 0), n,
                    "pegasos", 1e-3, 0.01, "sofia")
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        peers.append(SofiaML(learner="pegasos", lam=1e-3, n_iter=n).fit(tr.X, tr.y, tr.qid).fit_time_)
    wall, cpu, peer = min(walls), min(cpus), min(peers)
    rows.append(_row(f"target/ours vs sofia-ml 1e{int(np.log10(n))} steps", wall, cpu_seconds=cpu,
                     learner="pegasos", sampler="sofia", n_steps=n, reference="sofia-ml",
                     reference_s=peer, ratio=wall / peer, ratio_cpu=cpu / peer,
                     target_ratio=TARGET_VS_SOFIA,
                     meets_target_cpu=bool(cpu / peer <= TARGET_VS_SOFIA),
                     timing="rough: min over interleaved repeats; sofia-ml's own clock() time"))
    return rows


def _row(case: str, seconds: float, **extra) -> dict:
    row = {"part": PART, "case": case, "seconds": seconds, **extra}
    shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items() if k != "part"}
    print(f"[spd] {shown}", flush=True)  # progress: the full table prints at the end
    return row


def timing_rows(quick: bool) -> list[dict]:
    """Speed of 1e5 and 1e8 steps on OHSUMED Fold1 train."""
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED"):
        print("[spd] OHSUMED not under RANKBENCH_DATA: OHSUMED timings skipped")
        return []
    tr = load_fold("OHSUMED", 1, "train")
    rows = []
    peer = {}
    for learner in LEARNERS + ("sgd_squared_hinge",):
        if learner in SOFIA_LEARNERS:  # the peer column: sofia-ml, same learner, steps and lambda
            peer[learner] = sofia_seconds(tr, 100_000, learner)
        for sampler in ("indexed", "uniform", "rejection", "sofia"):
            if quick and sampler != "indexed":
                continue
            wall, cpu = spd_steps_seconds(tr.X, tr.y, tr.query_ptr, 100_000, learner, sampler)
            rows.append(_row("ohsumed_fold1_1e5", wall, cpu_seconds=cpu, learner=learner,
                             sampler=sampler, n_steps=100_000, target_s=TARGET_1E5_S,
                             **_peer_cols(wall, peer.get(learner))))
    n_big = 10**6 if quick else 10**8
    wall, cpu = spd_steps_seconds(tr.X, tr.y, tr.query_ptr, n_big, "pegasos", "indexed", repeats=1)
    rows.append(_row(f"ohsumed_fold1_1e{int(np.log10(n_big))}", wall, cpu_seconds=cpu,
                     learner="pegasos", sampler="indexed", n_steps=n_big,
                     target_s=15.0 if n_big == 10**8 else None,
                     **_peer_cols(wall, sofia_seconds(tr, min(n_big, 10**7), "pegasos", repeats=1)
                                  * (n_big / min(n_big, 10**7)) if built("sofia") else None,
                                  scaled=n_big > 10**7)))
    return rows


def sofia_seconds(tr, n_steps: int, learner: str, repeats: int = 5) -> float | None:
    """sofia-ml's own training seconds (best of ``repeats``) for ``n_steps`` rank-loop steps, or
    None when the peer is not built (make peers)."""
    if not built("sofia"):
        return None
    from rankbench.peers.solvers import SofiaML

    return min(SofiaML(learner=learner, lam=1e-3, n_iter=n_steps).fit(tr.X, tr.y, tr.qid).fit_time_
               for _ in range(repeats))


def _peer_cols(ours: float, peer: float | None, scaled: bool = False) -> dict:
    if peer is None:
        return {"sofia_ml_s": None, "ratio_vs_sofia": None,
                "peer_note": "sofia-ml not built: make peers" if not built("sofia") else "no sofia-ml learner"}
    return {"sofia_ml_s": peer, "ratio_vs_sofia": ours / peer if peer > 0 else None,
            "peer_note": "sofia-ml timed at 1e7 steps, scaled linearly" if scaled else ""}


def rcv1_like_rows(quick: bool) -> list[dict]:
    """Speed of 1e5 steps on a sparse RCV1-E311-shaped single-query problem."""
    from rankbench.data.synthetic import make_rcv1_like

    n = 100_000 if quick else 781_265
    t = time.perf_counter()
    data = make_rcv1_like(n=n, d=47_236, nnz_per_row=75, positive_rate=0.002, seed=0)
    gen_s = time.perf_counter() - t
    rows = []
    for learner in ("pegasos", "pa1"):
        for sampler in ("indexed", "uniform", "rejection"):
            wall, cpu = spd_steps_seconds(data.X, data.y, data.query_ptr, 100_000, learner,
                                          sampler, lam=1e-5, repeats=3)
            rows.append(_row("rcv1_like_1e5", wall, cpu_seconds=cpu, learner=learner,
                             sampler=sampler, n_docs=n, nnz=int(data.X.nnz),
                             positives=int(data.y.sum()), generate_s=gen_s, target_s=1.0,
                             synthetic=True, sofia_ml_s=None, ratio_vs_sofia=None,
                             peer_note="sofia-ml not timed here: it would first need this "
                                       "problem written as a text file of about 1 GB (the "
                                       "OHSUMED rows carry the sofia-ml column)"))
    return rows


def optimum_rows(quick: bool) -> list[dict]:
    """Pegasos (uniform sampler) objective after 1e7 steps vs the cutting-plane optimum."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.estimators.ranksvm import RankSVM
    from rankbench.objective import ranksvm_objective

    if not dataset_available("OHSUMED"):
        return []
    tr = load_fold("OHSUMED", 1, "train")
    rows = []
    n_iter = 10**6 if quick else 10**7
    for lam in (1e-2, 1e-3):
        spd = SPDRanker(learner="pegasos", sampler="uniform", lam=lam, n_iter=n_iter).fit(
            tr.X, tr.y, tr.qid)
        C = spd.C_equiv_
        t = time.perf_counter()
        cp = RankSVM(C=C, solver="cutting_plane", loss="hinge", tol=1e-4).fit(tr.X, tr.y, tr.qid)
        cp_s = time.perf_counter() - t
        f_spd = ranksvm_objective(spd.coef_, tr.X, tr.y, tr.query_ptr, C, loss="hinge")
        rows.append(_row("optimum_ohsumed_fold1", spd.fit_time_, lam=lam, C=C,
                         n_steps=n_iter, spd_objective=f_spd, cutting_plane_objective=cp.objective_,
                         relative_gap=(f_spd - cp.objective_) / cp.objective_,
                         cutting_plane_tol=1e-4,
                         cutting_plane_s=cp_s))
    return rows


@PARTS.register("spd")
def run(quick: bool = False) -> list[dict]:
    """All SPD benchmark rows (see the module docstring)."""
    rows = target_rows(quick)
    rows += timing_rows(quick)
    rows += rcv1_like_rows(quick)
    rows += optimum_rows(quick)
    return rows
