"""Lee & Lin 2014 (supplement)'s own claim rules: Tree-TRON against the cutting plane per
iteration (Fig. II), measured against an independent f*; the dual solution's density."""

from __future__ import annotations

import numpy as np

from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.claim_rules._common import arm, conclude, gate, merge, over_datasets
from rankbench.report.ledger import ClaimContext, Verdict
from rankbench.report.records import choose_per_fold, history, value


def iterations_to(run, f_star: float, target: float) -> tuple[int | None, float | None]:
    """(iterations, seconds) until (f - f*) / f* <= target: CG iterations for Tree-TRON (its
    CG iterates), iterations otherwise; (None, None) when never reached."""
    from rankbench.report.renderers.lee_lin import iterate_scores

    elapsed = {h.get("cg_iter") if run.spec["solver"].startswith("tron") else h.get("iter"):
               h.get("elapsed") for h in history(run.record)}
    for p in iterate_scores(run):
        if p["objective"] is not None and (p["objective"] - f_star) / abs(f_star) <= target:
            return p["x"], elapsed.get(p["x"])
    return None, None


def reference_f_star(cx: ClaimContext, experiments: list[str], dataset: str, loss: str, C: float):
    """(f*, run) of the problem (loss, C) on ``dataset``: the lowest objective of the independent
    tight solves (every run of ``experiments[0]``, the reference solvers of the others);
    None when none is stored."""
    from rankbench.report.renderers.lee_lin import REFERENCE_SOLVERS, independent_f_star

    plans = [cx.plan(e) for e in experiments]
    return independent_f_star([p for p in plans if p is not None], dataset, loss, C,
                              REFERENCE_SOLVERS)


def race(cx: ClaimContext, runs: dict, experiments: list[str], dataset: str,
         target: float) -> dict | None:
    """Per solver of ``runs`` (tron_tree, cutting_plane): C, iterations and seconds until
    (f - f*)/f* <= target, seconds per iteration, converged; None when an f* is missing
    (its description in ``["missing"]``)."""
    from rankbench.report.renderers.lee_lin import problem_key

    out: dict = {}
    for solver, run in runs.items():
        loss, C = problem_key(run)
        ref = reference_f_star(cx, experiments, dataset, loss, C)
        if ref is None:
            out.setdefault("missing", []).append(f"{solver} ({loss}, C = {C:g})")
            continue
        it, secs = iterations_to(run, ref[0], target)
        n_it = value(run.record, "train.n_cg_iter" if solver.startswith("tron") else "train.n_iter")
        per = (value(run.record, "train.wall_s") or 0.0) / n_it if n_it else None
        out[solver] = {"C": C, "it": it, "s": secs, "per": per, "n_it": n_it,
                       "conv": (run.record.get("train") or {}).get("converged")}
    return out


def race_text(label: str, r: dict) -> str:
    """One sentence of a race: each method's C, iterations and seconds to the target."""
    t, c = r["tron_tree"], r["cutting_plane"]
    return (f"{label}: Tree-TRON (C = {t['C']:g}) {_it(t)} CG iterations{_s(t['s'])}, "
            f"cutting plane (C = {c['C']:g}) {_it(c)} iterations{_s(c['s'])}"
            + (" (stopped at its iteration cap)" if c["conv"] is False else "")
            + f"; one iteration costs {_ms(t['per'])} (CG) against {_ms(c['per'])}")


def tron_first(r: dict) -> bool:
    """Whether Tree-TRON reached the target in fewer iterations than the cutting plane."""
    t, c = r["tron_tree"], r["cutting_plane"]
    return t["it"] is not None and (c["it"] is None or t["it"] < c["it"])


@CLAIM_RULES.register()
def tron_faster(cx: ClaimContext, exp: str, reference: str, datasets: list[str],
                target: float = 1e-6, common_C: float | None = None,
                select_on: str = "vali.pairwise_accuracy") -> Verdict:
    """'In all problems Tree-TRON is faster' (per iteration, CG iterations for TRON): on every
    dataset present, at each method's C of best validation pairwise accuracy (the supplement's
    setting), Tree-TRON reaches (f - f*)/f* <= ``target`` in fewer iterations than the cutting
    plane; f* from the independent tight solves (``reference``, and the reference solvers of
    ``exp``).  The measured text adds the cost of an iteration and the same race at one
    ``common_C``, and says where a reversal comes from."""
    parts = []
    for ds in datasets:
        tron = arm(cx, {"exp": exp, "solver": "tron_tree", "dataset": ds, "label": "Tree-TRON"})
        cp = arm(cx, {"exp": exp, "solver": "cutting_plane", "dataset": ds, "label": "cutting plane"})
        g = gate(tron, cp)
        if g:
            parts.append((tron.dataset_label or ds, g))
            continue
        chosen = choose_per_fold(tron.chosen + cp.chosen, select_on)
        sel = {s: chosen[(ds, s)][0] for s in ("tron_tree", "cutting_plane") if (ds, s) in chosen}
        if len(sel) < 2:
            parts.append((tron.dataset_label, Verdict("pending", why="no selected run per method")))
            continue
        refs = [reference, exp]
        at_sel = race(cx, sel, refs, ds, target)
        same = None
        if common_C is not None:
            pair = {s: next((r for r in a.chosen if np.isclose(r.spec["params"]["C"], common_C)), None)
                    for s, a in (("tron_tree", tron), ("cutting_plane", cp))}
            same = race(cx, pair, refs, ds, target) if all(pair.values()) else None
        missing = (at_sel.get("missing") or []) + ((same or {}).get("missing") or [])
        if missing:
            parts.append((tron.dataset_label, Verdict(
                "pending", why=f"no independent f* stored ({reference}) for {', '.join(missing)}",
                runs=tron.run_ids + cp.run_ids, tags=tron.tags + cp.tags)))
            continue
        ok = tron_first(at_sel)
        text = [race_text(f"at each method's selected C ({select_on})", at_sel)]
        if same is not None:
            text.append(race_text(f"at one C = {common_C:g}", same))
            if not ok and tron_first(same):
                text.append(f"the reversal comes from the C values selected: the cutting plane's "
                            f"C = {at_sel['cutting_plane']['C']:g} against Tree-TRON's "
                            f"C = {at_sel['tron_tree']['C']:g}; at one C Tree-TRON is first")
            elif not ok:
                text.append("the cutting plane is first at one common C too")
        parts.append((tron.dataset_label, conclude(
            ok, [tron, cp], "; ".join(text),
            f"iterations until (f - f*)/f* <= {target:g}, f* independent ({reference}: LIBLINEAR "
            "dual coordinate descent for the L1 loss; Newton-CG to 1e-12 for the L2 loss)")))
    return merge(parts) if len(parts) > 1 else parts[0][1]


def _it(r: dict) -> str:
    return f"does not reach it in its {r['n_it']:.0f}" if r["it"] is None else f"{r['it']}"


def _s(v) -> str:
    return "" if v is None else f" ({v:.3g} s)"


def _ms(v) -> str:
    return "n/a" if v is None else f"{1e3 * v:.2f} ms"


@CLAIM_RULES.register()
def dense_dual(cx: ClaimContext, exp: str, datasets: list[str], above: float = 0.75) -> Verdict:
    """'More than 75% of the elements are non-zero': the share of non-zero dual variables at the
    optimum (C = 2^20), recorded per run, above ``above`` on every dataset present."""

    def judge(a):
        share = value(a.chosen[0].record, "extra.zero_dual_share")
        nz = None if share is None else 1.0 - share
        return conclude(nz is not None and nz > above, [a],
                        f"{100 * nz:.2f}% non-zero" if nz is not None else "not recorded",
                        f"criterion > {100 * above:g}%")

    return over_datasets(datasets, lambda ds: [arm(cx, {"exp": exp, "solver": "tron_tree",
                                                         "dataset": ds})], judge)


@CLAIM_RULES.register()
def margins_between_zero_and_one(cx: ClaimContext, exp: str, datasets: list[str]) -> Verdict:
    """'Most pairs are correctly classified, yet satisfy 0 < w.(x_i - x_j) < 1': from the pair
    counts the runs record (pairs with margin >= 1, correctly ordered pairs)."""

    def judge(a):
        rec = a.chosen[0].record
        n, ge1 = value(rec, "extra.n_pairs"), value(rec, "extra.n_pairs_margin_ge_1")
        pos = value(rec, "extra.n_pairs_margin_pos")
        if n is None or ge1 is None or pos is None:
            return Verdict(
                "not testable here",
                measured=f"{100 * ge1 / n:.1f}% of training pairs with margin >= 1" if n and ge1 is not None else "",
                why="the runs record the pairs with margin >= 1 only, not the correctly ordered "
                    "training pairs (extra.n_pairs_margin_pos)", runs=a.run_ids, tags=a.tags)
        between = (pos - ge1) / n
        return conclude(pos / n > 0.5 and between > ge1 / n, [a],
                        f"{100 * pos / n:.1f}% of training pairs correctly ordered, {100 * between:.1f}% "
                        f"with margin in (0, 1), {100 * ge1 / n:.1f}% with margin >= 1")

    return over_datasets(datasets, lambda ds: [arm(cx, {"exp": exp, "solver": "tron_tree",
                                                         "dataset": ds})], judge)
