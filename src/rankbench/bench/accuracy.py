"""Solvers at equal accuracy (issue 11, benchopt's view): relative suboptimality against wall time.

Each solver runs with a tight tolerance and records its objective after every iteration
(``history_``); the reference is the best objective any solver reached on that problem.  Each
solver is fitted ``repeats`` times (at least 3): rows give, per problem and solver, the median
wall time to reach each relative suboptimality level (1e-2, 1e-4, 1e-6 by default; ``nan`` =
never reached) with the fastest and slowest repeat, and one figure per problem draws
(f_t - f_best) / f_best against the median wall time, the band between the fastest and the
slowest repeat shaded (``accuracy_<problem>.png`` in the output folder).  Wall time of an
iterate = the optimizer's elapsed time plus the oracle's setup (``fit_time_`` minus the
optimizer's own time: the pair list of PRSVM, the label levels, the sort structures), numba
compilation excluded.

Problems, solvers, repeats and levels come from ``conf/bench/accuracy.yaml`` (another file of
that shape with ``--config accuracy=PATH``): by default OHSUMED and MQ2008 Fold1 at the
papers' C, a 480,000-document LETOR-like synthetic problem and a 1,000,000-document sparse AUC
problem (``--quick``: 48,000 and 100,000).  The machine is shared: times are upper bounds.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.bench import PARTS
from rankbench.estimators.ranksvm import RankSVM, warm_up_kernels

MIN_REPEATS = 3


def default_config() -> Path:
    """``conf/bench/accuracy.yaml`` of rankbench's config folder (``RANKBENCH_CONF_DIR`` or the
    source tree's ``conf/``)."""
    from rankbench.plan import conf_dir

    return Path(conf_dir()) / "bench" / "accuracy.yaml"


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """The accuracy benchmark's settings as plain Python; ValueError naming a bad entry."""
    from omegaconf import OmegaConf

    path = Path(path) if path is not None else default_config()
    cfg = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    for key in ("repeats", "tol", "levels", "solvers", "problems"):
        if key not in cfg:
            raise ValueError(f"{path}: no {key!r} entry")
    if int(cfg["repeats"]) < MIN_REPEATS:
        raise ValueError(f"{path}: repeats must be at least {MIN_REPEATS} (a spread needs them), "
                         f"got {cfg['repeats']}")
    for i, p in enumerate(cfg["problems"]):
        if "name" not in p or "C" not in p or ("dataset" in p) == ("generator" in p):
            raise ValueError(f"{path}: problem {i} needs a name, a C and one of dataset / generator")
    return cfg


def _problems(cfg: dict[str, Any], quick: bool):
    """(name, C, X, y, qid, solvers) per configured problem; data sets not on disk are skipped."""
    from rankbench.data import dataset_available, load_fold, synthetic

    for p in cfg["problems"]:
        solvers = tuple(s for s in cfg["solvers"] if s not in p.get("exclude", ()))
        if "dataset" in p:
            if not dataset_available(p["dataset"]):
                print(f"[accuracy] {p['name']}: {p['dataset']} not under the data root, skipped",
                      flush=True)
                continue
            tr = load_fold(p["dataset"], int(p.get("fold", 1)), "train")
            yield p["name"], float(p["C"]), tr.X, tr.y, tr.qid, solvers
            continue
        params = {**p.get("params", {}), **(p.get("quick", {}) if quick else {})}
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
        d = getattr(synthetic, p["generator"])(**params)
        qid = d.qid if d.n_queries > 1 else None
        yield f"{p['name']}_{d.n_docs}", float(p["C"]), d.X, d.y, qid, solvers


def _curve(m: RankSVM) -> tuple[np.ndarray, np.ndarray]:
    """(wall seconds, objective) per iterate, setup time included."""
    t = np.array([h["elapsed"] for h in m.history_])
    f = np.array([h["objective"] for h in m.history_])
    setup = max(0.0, m.fit_time_ - float(t[-1])) if t.size else 0.0
    return t + setup, f


def _time_to(t: np.ndarray, sub: np.ndarray, level: float) -> float:
    hit = np.flatnonzero(sub <= level)
    return float(t[hit[0]]) if hit.size else float("nan")


def _spread(curves: list[tuple[np.ndarray, np.ndarray]]):
    """(median, fastest, slowest wall time per iterate, objective per iterate) over repeats of
    one solver: the iterates are the same (deterministic solvers); the shortest run bounds them."""
    n = min(t.size for t, _ in curves)
    times = np.stack([t[:n] for t, _ in curves])
    return np.median(times, axis=0), times.min(axis=0), times.max(axis=0), curves[0][1][:n]


def figure(problem: str, spreads: dict, f_best: float, levels, path: Path):
    """One problem's figure: relative suboptimality against median wall time per solver, the
    repeats' min-max band shaded, each level a labelled line; the legend sits beside the axes
    (never over a curve).  Returns the matplotlib figure (saved to ``path``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    styles = ["-", "--", "-.", ":"]
    for k, (solver, (t_med, t_lo, t_hi, f)) in enumerate(sorted(spreads.items())):
        sub = np.maximum((f - f_best) / f_best, 1e-16)
        (line,) = ax.semilogy(t_med, sub, styles[k % 4], marker="o", ms=2.5, lw=1.1, label=solver)
        ax.fill_betweenx(sub, t_lo, t_hi, color=line.get_color(), alpha=0.2, lw=0)
    right = blended_transform_factory(ax.transAxes, ax.transData)
    for level in levels:
        ax.axhline(level, color="0.6", lw=0.6, ls=":", zorder=0)
        ax.text(1.01, level, f"{level:g}", transform=right, fontsize=7, color="0.35", va="center",
                ha="left")
    ax.set_xlabel("wall time (s, median of repeats; band: fastest to slowest)")
    ax.set_ylabel("(f - f_best) / f_best")
    ax.set_title(problem, fontsize=9)
    fig.tight_layout()
    fig.subplots_adjust(right=0.68)  # room for the level labels and the legend
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1.0), borderaxespad=0.0,
              frameon=False)
    fig.savefig(path, dpi=150)
    return fig


@PARTS.register("accuracy")
def run(quick: bool = False, out: Path | str = Path("results/_scratch/bench"),
        config: Path | str | None = None) -> list[dict]:
    """Rows: per problem x solver, median / fastest / slowest time to each level over the
    repeats; one figure per problem in ``out``; a progress line per solver on stdout."""
    import matplotlib.pyplot as plt

    cfg = load_config(config)
    levels = [float(v) for v in cfg["levels"]]
    repeats = int(cfg["repeats"])
    caps = cfg.get("max_iter", {})
    warm_up_kernels()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for problem, C, X, y, qid, solvers in _problems(cfg, quick):
        curves, last = {}, {}
        small = min(int(np.asarray(y).shape[0]), 2000)  # a slice compiles the same kernels
        for s in solvers:
            runs = []
            t0 = time.perf_counter()
            for rep in range(repeats + 1):
                m = RankSVM(C=C, solver=s, tol=float(cfg["tol"]),
                            max_iter=int(caps.get(s, caps.get("default", 500))),
                            keep_coef_history=False)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if rep == 0:  # untimed: numba compiles (or loads) this solver's kernels
                        m.fit(X[:small], y[:small], None if qid is None else qid[:small])
                        continue
                    m.fit(X, y, qid)
                runs.append(_curve(m))
            curves[s], last[s] = runs, m
            finals = [float(t[-1]) for t, _ in runs]
            print(f"[accuracy] {problem}: {s} x{repeats} in {time.perf_counter() - t0:.2f}s "
                  f"(fit {min(finals):.3f}-{max(finals):.3f}s, {len(runs[0][0])} iterations, "
                  f"f = {runs[0][1][-1]:.6g})", flush=True)
        f_best = min(float(np.min(f)) for runs in curves.values() for _, f in runs)
        spreads = {s: _spread(runs) for s, runs in curves.items()}
        name = f"accuracy_{problem}.png"
        plt.close(figure(problem, spreads, f_best, levels, out / name))
        for s, runs in curves.items():
            m = last[s]
            per_level = {lv: [_time_to(t, (f - f_best) / f_best, lv) for t, f in runs] for lv in levels}
            row = {"part": "accuracy", "case": f"accuracy/{problem}/{s}", "problem": problem,
                   "solver": s, "C": C, "n": int(np.asarray(y).shape[0]), "repeats": repeats,
                   "f_best": f_best,
                   "final_rel_subopt": float((runs[0][1][-1] - f_best) / f_best),
                   "converged": m.converged_,
                   "seconds": float(np.median([t[-1] for t, _ in runs])),
                   "seconds_min": float(min(t[-1] for t, _ in runs)),
                   "seconds_max": float(max(t[-1] for t, _ in runs)), "figure": name}
            for lv, times in per_level.items():
                row[f"t_{lv:g}"] = float(np.median(times))
                row[f"t_{lv:g}_min"] = float(np.min(times))
                row[f"t_{lv:g}_max"] = float(np.max(times))
            rows.append(row)
    sys.stdout.flush()
    return rows
