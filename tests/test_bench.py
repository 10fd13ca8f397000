"""`python -m rankbench.bench`: every file a run writes goes under --out (a run leaves the checkout
and its committed results/ untouched), per-part tables carry only the columns their rows fill,
the accuracy part repeats each solver from its config and draws the spread with the legend
beside the axes and labelled levels, and index.html shows the targets and the figures."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rankbench.bench.__main__ import _filled_tables, _markdown, _write_html, _write_summary

REPO = Path(__file__).resolve().parents[1]

TINY = """
repeats: 3
tol: 1.0e-10
levels: [1.0e-2, 1.0e-4, 1.0e-6]
solvers: [prsvm_plus, tron_tree]
max_iter: {default: 200}
problems:
  - {name: absent_set, dataset: td2003, fold: 1, C: 1.0e-3}
  - name: tiny_letor
    generator: make_letor_like
    params: {n_queries: 40, docs_per_query: [8, 12], n_features: 5, n_levels: 3, seed: 0}
    C: 1.0e-2
"""


def _tree_state(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_a_bench_run_with_out_writes_only_there(tmp_path):
    """metrics and accuracy (tiny config) with --out: every file lands in that folder; the
    checkout's git status and the committed results/bench are as before."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    config = tmp_path / "accuracy.yaml"
    config.write_text(TINY)
    out = tmp_path / "bench"
    before, committed = _git_status(), _tree_state(REPO / "results" / "bench")
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "RANKBENCH_DATA": str(tmp_path / "no-data")}
    done = subprocess.run([sys.executable, "-m", "rankbench.bench", "metrics", "accuracy", "--quick",
                           "--out", str(out), "--config", f"accuracy={config}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _git_status() == before
    assert _tree_state(REPO / "results" / "bench") == committed
    names = {p.name for p in out.iterdir()}
    assert names == {"SUMMARY.md", "index.html", "metrics.json", "metrics.md", "accuracy.json",
                     "accuracy.md", "accuracy_tiny_letor_401.png"}
    # progress: one line per solver, and the absent data set named
    assert "[accuracy] absent_set: td2003 not under the data root, skipped" in done.stdout
    assert re.search(r"\[accuracy\] tiny_letor_401: prsvm_plus x3 in", done.stdout)
    assert re.search(r"\[accuracy\] tiny_letor_401: tron_tree x3 in", done.stdout)
    # no table of SUMMARY.md has a column that is empty or nan in every row
    for table in re.findall(r"((?:^\|.*\|\n)+)", (out / "SUMMARY.md").read_text(), flags=re.M):
        lines = table.strip().splitlines()
        cols = list(zip(*[[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]], strict=True))
        assert all(any(v not in ("nan", "", "None") for v in col) for col in cols), lines[0]
    page = (out / "index.html").read_text()
    assert '<img src="accuracy_tiny_letor_401.png"' in page and "<h2 id=\"accuracy\">" in page


def test_part_tables_group_rows_by_the_columns_they_fill():
    rows = [{"part": "spd", "case": "a", "seconds": 1.0, "goal": 1.0, "sofia_ml_s": float("nan")},
            {"part": "spd", "case": "b", "seconds": 2.0, "goal": None, "sofia_ml_s": 3.0},
            {"part": "spd", "case": "c", "seconds": 4.0, "goal": 2.0, "sofia_ml_s": float("nan")}]
    tables = _filled_tables(rows)
    assert len(tables) == 2
    assert tables[0].splitlines()[0] == "| case | seconds | goal |"
    assert tables[0].count("\n") == 3  # header, rule, rows a and c
    assert tables[1].splitlines()[0] == "| case | seconds | sofia_ml_s |"
    assert "nan" not in "".join(tables)


def test_accuracy_repeats_each_solver_and_draws_the_spread(tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    from rankbench.bench import accuracy

    config = tmp_path / "accuracy.yaml"
    config.write_text(TINY)
    rows = accuracy.run(quick=True, out=tmp_path, config=config)
    assert [r["solver"] for r in rows] == ["prsvm_plus", "tron_tree"]
    for r in rows:
        assert r["repeats"] == 3 and r["figure"] == "accuracy_tiny_letor_401.png"
        for key in ("seconds", "t_0.01", "t_1e-06"):
            assert r[f"{key}_min"] <= r[key] <= r[f"{key}_max"]
    out = capsys.readouterr().out
    assert out.count("[accuracy] tiny_letor_401:") == 2
    # the figure: legend outside the axes, each level a labelled line, a band per solver
    from rankbench.bench.accuracy import _spread, figure

    t = np.array([0.1, 0.2, 0.3])
    f = np.array([2.0, 1.1, 1.0])
    spreads = {"a": _spread([(t, f), (t * 2, f), (t * 3, f)]), "b": _spread([(t, f), (t, f), (t, f)])}
    fig = figure("p", spreads, 1.0, [1e-2, 1e-4], tmp_path / "p.png")
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(ax.get_window_extent(renderer))
    assert {tx.get_text() for tx in ax.texts} == {"0.01", "0.0001"}
    np.testing.assert_allclose(spreads["a"][0], 2 * t)  # median of 1x, 2x, 3x
    np.testing.assert_allclose(spreads["a"][2], 3 * t)
    assert len(ax.collections) == 2  # one shaded band per solver
    with pytest.raises(ValueError, match="repeats must be at least 3"):
        config.write_text(TINY.replace("repeats: 3", "repeats: 1"))
        accuracy.load_config(config)


def test_index_html_has_the_targets_table_and_each_parts_figures(tmp_path):
    rows = [{"part": "accuracy", "case": "x", "target": "tree Hv per read of X", "measured": 2.0,
             "reference": "one read", "reference_value": 1.0, "ratio": 2.0, "goal": 2.5,
             "higher_is_better": False, "met": True}]
    (tmp_path / "accuracy.json").write_text(json.dumps({"meta": {}, "rows": rows}))
    (tmp_path / "accuracy.md").write_text("## accuracy\n\nrun line\n\n" + "\n\n".join(_filled_tables(rows)) + "\n")
    (tmp_path / "accuracy_p.png").write_bytes(b"\x89PNG")
    _write_summary(tmp_path)
    _write_html(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert "<h2 id=\"Targets\">Targets</h2>" in page
    assert "<td>tree Hv per read of X</td>" in page and "<td>≤ 2.5</td>" in page
    assert page.index('<h2 id="accuracy">') < page.index('<img src="accuracy_p.png"')


def test_summary_targets_come_from_the_committed_md_alone(tmp_path):
    """SUMMARY.md's targets table is read back from each part's .md (the JSON is never committed,
    so a fresh machine has none): the same rows, and the same printed values, as the rows the
    part returned; a part's rows without a goal stay out."""
    from rankbench.bench.__main__ import _target_frame, md_targets

    rows = [
        {"part": "targets", "case": "a", "target": "tree Hv per read of X, CSR 1000000 x 47236",
         "reference": "one read of X", "measured": 0.32190271000013126,
         "reference_value": 0.08646004399997764, "ratio": 3.7231384013662367, "goal": 4.0,
         "met": True, "higher_is_better": False},
        {"part": "targets", "case": "b", "target": "scipy X @ v per read of X (context)",
         "reference": "one read of X", "measured": 0.1526, "reference_value": 0.0822,
         "ratio": 1.856, "goal": float("inf"), "met": True, "higher_is_better": False},
        {"part": "targets", "case": "c", "target": "tron_tree speed-up with 2 threads",
         "reference": "1 thread", "measured": 0.65, "reference_value": 0.455, "ratio": 1.428,
         "goal": 1.6, "met": False, "higher_is_better": True, "identical_weights": True},
        {"part": "targets", "case": "d", "target": "fit memory", "reference": "bytes of X",
         "measured": 199272945, "reference_value": 904036148, "ratio": 0.2204, "goal": 0.25,
         "met": True, "higher_is_better": False},
        {"part": "targets", "case": "e", "seconds": 1.5e7, "note": "no goal: not a target"},
    ]
    load = [{"part": "load", "case": "x", "target": "busy loop: MQ2008 Fold1 tron_tree default",
             "measured": 0.0158, "reference": "NUMBA_NUM_THREADS=1", "reference_value": 0.0157,
             "ratio": 1.003, "goal": 1.25, "met": True, "higher_is_better": False,
             "ratio_of_minima": 0.998, "paired_ratios": 31, "paired_median": 1.01,
             "balanced_pairs": 15, "ratio_low": -0.5, "ratio_high": 1.04}]
    for part, part_rows in (("targets", rows), ("load", load)):
        (tmp_path / f"{part}.md").write_text(f"## {part}\n\nrun line 1e5 | 2\n\n"
                                            + "\n\n".join(_filled_tables(part_rows)) + "\n")
    read = md_targets((tmp_path / "targets.md").read_text())
    # in the .md's order (tables by the columns rows fill: "c" has one more); "e" has no goal
    assert [r["case"] for r in read] == ["a", "b", "d", "c"]
    by_case = {r["case"]: r for r in read}
    assert by_case["b"]["goal"] == float("inf") and by_case["c"]["higher_is_better"] is True
    assert by_case["c"]["met"] is False
    assert by_case["d"]["measured"] == 1.993e8  # as printed: 4 significant digits
    assert md_targets((tmp_path / "load.md").read_text())[0]["ratio_low"] == -0.5
    _write_summary(tmp_path)
    table = (tmp_path / "SUMMARY.md").read_text().split("## Targets", 1)[1].split("\n## ", 1)[0]
    expected = _markdown(_target_frame([r for r in rows + load if "goal" in r]))
    assert sorted(ln for ln in table.splitlines() if ln.startswith("| ")) == sorted(
        ln for ln in expected.splitlines() if ln.startswith("| "))
    assert "| tron_tree speed-up with 2 threads | 0.65 | 1 thread | 0.455 | 1.428 | \u2265 1.6 | False |" in table


def test_per_read_alternates_the_operation_and_the_read_and_keeps_each_minimum():
    """An operation and its reference read of X are timed in alternating rounds (targets.per_read):
    the order of the calls alternates, each is called once a round, and each minimum is its own."""
    import scipy.sparse as sp

    from rankbench.bench import targets

    X = sp.random(200, 30, density=0.2, format="csr", random_state=0)
    calls = []
    real = targets.read_call

    def fake_read_call(X):
        read = real(X)
        return lambda: (calls.append("read"), read())

    targets.read_call = fake_read_call
    try:
        t_op, t_read = targets.per_read(lambda: (calls.append("op"), __import__("time").sleep(0.003)),
                                        X, rounds=4)
    finally:
        targets.read_call = real
    assert calls == ["op", "read", "read", "op", "op", "read", "read", "op"]
    assert t_op >= 0.003 > t_read > 0.0


def test_ours_x_v_is_timed_against_scipys_in_alternating_rounds(monkeypatch):
    """The row of rankbench's X v against scipy's X @ v times the two in alternating rounds
    (``targets.alternating``), not ours first and scipy's after it."""
    import scipy.sparse as sp

    from rankbench.bench import targets
    from rankbench.objective import products

    calls = []
    real_matvec = products.XProducts.matvec
    real_alternating = targets.alternating
    monkeypatch.setattr(products.XProducts, "matvec",
                        lambda self, v, **k: (calls.append("ours"), real_matvec(self, v, **k))[1])

    def alternating(op, ref, rounds=7):
        calls.append("start")
        return real_alternating(op, lambda: (calls.append("ref"), ref())[1], rounds)

    monkeypatch.setattr(targets, "alternating", alternating)
    X = sp.random(300, 40, density=0.1, format="csr", random_state=0)
    y = np.zeros(300)
    y[::3] = 1.0
    ptr = np.array([0, 300])
    monkeypatch.setattr(targets, "_problems", lambda quick: iter([("CSR 300 x 40", X, y, ptr, 0.1)]))
    rows = targets.operation_rows(True)
    first = calls.index("start")
    # the untimed warm-up call, then the oracles' own warm-up products (built before any timing)
    assert calls[0] == "ours" and set(calls[:first]) == {"ours"}
    assert calls[first + 1:first + 15] == ["ours", "ref", "ref", "ours"] * 3 + ["ours", "ref"]
    assert rows[0]["target"].startswith("X v (rankbench, all threads) per scipy's")
    assert rows[0]["reference"] == "scipy X @ v"


def test_operation_rows_time_every_operation_with_blas_on_one_thread_as_a_fit_does(monkeypatch):
    """The per-operation rows time the oracles in a fit's thread context: BLAS on one thread
    (``parallel.one_blas_thread``, around RankSVM's optimizer), so that f's ``w @ w`` does not
    wake a BLAS thread that then spins beside the numba kernels (stop 50: 1.4x the one-query
    X w); the caller's BLAS thread count is given back after."""
    import scipy.sparse as sp
    from threadpoolctl import threadpool_info, threadpool_limits

    from rankbench import parallel
    from rankbench.bench import targets

    def blas_threads():
        return {m["filepath"]: m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"}

    seen = []
    real_alternating = targets.alternating

    def alternating(op, ref, rounds=7):
        seen.append(blas_threads())
        return real_alternating(op, ref, 1)

    monkeypatch.setattr(targets, "alternating", alternating)
    # no controller cached by an earlier test, from before a BLAS library this one sees loaded
    monkeypatch.setattr(parallel, "_BLAS", {})
    X = sp.random(300, 40, density=0.1, format="csr", random_state=0)
    y = np.zeros(300)
    y[::3] = 1.0
    ptr = np.array([0, 300])
    monkeypatch.setattr(targets, "_problems", lambda quick: iter([("CSR 300 x 40", X, y, ptr, 0.1)]))
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and set(before.values()) == {2}
        rows = targets.operation_rows(True)
        # the libraries loaded before (numpy's, whose dot f calls); the run may load more
        assert {k: v for k, v in blas_threads().items() if k in before} == before
    # X v against scipy, scipy against the read, then f+grad, Hv and the diagonal of two oracles
    assert len(seen) == 2 + 2 * 3 and len(rows) == 2 + 2 * 3
    assert all({k: v for k, v in s.items() if k in before} == {k: 1 for k in before} for s in seen)


def test_operation_rows_keep_each_minimum_over_passes_apart_and_every_pass_ratio(monkeypatch):
    """Each per-operation row is measured in passes some seconds apart (``operation_rows``):
    it keeps the minimum of the operation and of its reference over all passes, which may come
    from different passes, and each pass's ratio; quick runs take one pass, with no wait."""
    import rankbench.objective as objective
    from rankbench.bench import targets

    state = {"pass": 0, "i": 0, "sleeps": []}

    def per_read(op, X, rounds=7):
        t = script[state["pass"]][state["i"]]
        state["i"] += 1
        if state["i"] == len(script[state["pass"]]):
            state["pass"] += 1
            state["i"] = 0
        return t

    def sleep(s):
        state["sleeps"].append(s)

    monkeypatch.setattr(targets, "per_read", per_read)
    monkeypatch.setattr(targets.time, "sleep", sleep)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = np.tile([0.0, 1.0, 2.0], 20)
    ptr = np.array([0, 30, 60])
    monkeypatch.setattr(targets, "_problems", lambda quick: iter([("dense 60 x 4", X, y, ptr, 0.1)]))
    oracles = []
    real = objective.make_oracle
    monkeypatch.setattr(objective, "make_oracle",
                        lambda name, *a, **k: oracles.append(name) or real(name, *a, **k))
    # pass -> (operation, reference) of each row: tree f+grad, Hv, diagonal, then counting's
    script = {0: [(3.0, 1.0), (2.0, 1.5)] + [(9.0, 9.0)] * 4,
              1: [(5.0, 2.0), (6.0, 1.0)] + [(9.0, 9.0)] * 4}
    rows = targets.operation_rows(True, passes=2, gap_s=7.0)
    assert oracles == ["tree", "counting"]  # built once, timed in both passes
    assert state["sleeps"] == [7.0] and state["pass"] == 2
    fg, hv = rows[0], rows[1]
    assert fg["target"].startswith("tree f+grad") and hv["target"].startswith("tree Hv")
    assert (fg["measured"], fg["reference_value"], fg["ratio"]) == (3.0, 1.0, 3.0)
    assert fg["pass_ratios"] == [3.0, 2.5]
    assert (hv["measured"], hv["reference_value"]) == (2.0, 1.0)  # 2.0 from pass 0, 1.0 from pass 1
    assert hv["ratio"] == 2.0 and hv["pass_ratios"] == [1.3333, 6.0]
    assert len(rows) == 6 and all(len(r["pass_ratios"]) == 2 for r in rows)
    state.update({"pass": 0, "i": 0, "sleeps": []})
    script = {0: [(1.0, 1.0)] * 6}
    assert len(targets.operation_rows(True)) == 6 and state["sleeps"] == [] and state["pass"] == 1
