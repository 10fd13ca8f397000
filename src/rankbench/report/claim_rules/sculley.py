"""Sculley 2009's own claim rules: Fig. 2's convergence statements against the exact optimum of
the RankSVM objective, and absolute CPU times of the authors' laptop."""

from __future__ import annotations

from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.claim_rules._common import arm, conclude, gate, merge
from rankbench.report.ledger import ClaimContext, Verdict
from rankbench.report.records import history, not_converged, not_converged_text, value


def sculley_optimum(run) -> float | None:
    """The exact minimum of lambda/2 ||w||^2 + (1/|P|) sum hinge from a RankSVM run at
    C = 1/(lambda |P|): its objective 1/2 ||w||^2 + C sum hinge times lambda = 1/(C |P|)."""
    f = value(run.record, "train.objective")
    n_pairs = value(run.record, "extra.n_pairs")
    C = run.spec["params"].get("C")
    if f is None or not n_pairs or not C:
        return None
    return f / (C * n_pairs)


def curves(cx: ClaimContext, exp: str, dataset: str, solvers: list[str]):
    """{solver: (arm, [(iteration, train objective, test objective)])} of Fig. 2's runs."""
    out = {}
    for s in solvers:
        a = arm(cx, {"exp": exp, "solver": s, "dataset": dataset})
        rows = history(a.chosen[0].record) if a.chosen else []
        out[s] = (a, [(h.get("iteration"), h.get("objective"),
                       h.get("test_objective", h.get("eval_objective"))) for h in rows])
    return out


def _optimum(cx: ClaimContext, optimum: dict, lam: float | None):
    o = arm(cx, optimum)
    if o.state != "ok" or not o.chosen:
        return o, None, None
    f = sculley_optimum(o.chosen[0])
    n_pairs = value(o.chosen[0].record, "extra.n_pairs")
    lam_opt = 1.0 / (o.chosen[0].spec["params"]["C"] * n_pairs) if n_pairs else None
    if lam is not None and lam_opt is not None and abs(lam_opt / lam - 1) > 1e-3:
        return o, None, f"the optimum run is for lambda = {lam_opt:.3g}, the SPD runs use {lam:g}"
    return o, f, None


@CLAIM_RULES.register()
def converges_within(cx: ClaimContext, exp: str, optimum: dict, dataset: str,
                     solvers: list[str], iterations: float = 1e6, within: float = 0.05) -> Verdict:
    """'Converge to stable, apparently optimal values on training data within N iterations':
    the training objective at N is within ``within`` (relative) of the exact optimum f* and
    stays within it to the last checkpoint."""
    cs = curves(cx, exp, dataset, solvers)
    arms = [a for a, _ in cs.values()]
    g = gate(*arms)
    if g:
        return g
    lam = cs[solvers[0]][0].chosen[0].spec["params"].get("lam")
    o, f_star, problem = _optimum(cx, optimum, lam)
    if f_star is None:
        return gate(o) or Verdict("pending", why=problem or "no exact optimum stored")
    texts, ok = [], True
    for s, (a, pts) in cs.items():
        after = [(i, f) for i, f, _ in pts if i is not None and i >= iterations and f is not None]
        if not after:
            return Verdict("pending", why=f"{s}: no checkpoint at or after {iterations:g}")
        gaps = [(f - f_star) / f_star for _, f in after]
        ok &= max(gaps) <= within
        texts.append(f"{a.label}: (f - f*)/f* = {gaps[0]:.3g} at {after[0][0]:.0e}, "
                     f"{gaps[-1]:.3g} at {after[-1][0]:.0e}")
    return conclude(ok, [*arms, o], f"f* = {f_star:.6g} (exact optimum, lambda = {lam:g}); "
                    + "; ".join(texts), f"criterion: within {within:g} of f* from {iterations:.0e} on")


@CLAIM_RULES.register()
def test_objective_stable(cx: ClaimContext, exp: str, dataset: str, solvers: list[str],
                          iterations: float = 1e6, within: float = 0.05) -> Verdict:
    """'Continued training does not materially degrade the test objective': from ``iterations``
    to the last checkpoint the test objective rises by at most ``within`` (relative)."""
    cs = curves(cx, exp, dataset, solvers)
    arms = [a for a, _ in cs.values()]
    g = gate(*arms)
    if g:
        return g
    texts, ok = [], True
    for _s, (a, pts) in cs.items():
        after = [(i, t) for i, _, t in pts if i is not None and i >= iterations and t is not None]
        if len(after) < 2:
            return Verdict("pending", why=f"{a.label}: the runs hold no test objective per checkpoint")
        rise = after[-1][1] / after[0][1] - 1
        ok &= rise <= within
        texts.append(f"{a.label}: test objective {after[0][1]:.4g} at {after[0][0]:.0e}, "
                     f"{after[-1][1]:.4g} at {after[-1][0]:.0e} ({rise:+.1%})")
    return conclude(ok, arms, "; ".join(texts), f"criterion: rises by at most {within:.0%}")


@CLAIM_RULES.register()
def early_lead(cx: ClaimContext, exp: str, dataset: str, leaders: list[str], others: list[str],
               before: float = 1e5) -> Verdict:
    """'X and Y give much better objective values than the others at small numbers of
    iterations': at every checkpoint below ``before`` each leader's training objective is
    below every other learner's."""
    cs = curves(cx, exp, dataset, leaders + others)
    arms = [a for a, _ in cs.values()]
    g = gate(*arms)
    if g:
        return g
    at = {s: {i: f for i, f, _ in pts if i is not None and i < before and f is not None}
          for s, (_, pts) in cs.items()}
    its = sorted(set.intersection(*(set(v) for v in at.values())))
    wins = [i for i in its if max(at[s][i] for s in leaders) < min(at[s][i] for s in others)]
    best_other = {i: min(at[s][i] for s in others) for i in its}
    ratios = [best_other[i] / max(at[s][i] for s in leaders) for i in its]
    measured = (f"leaders below every other learner at {len(wins)} of {len(its)} checkpoints "
                f"before {before:.0e}; best other / worst leader from {min(ratios):.3g} to "
                f"{max(ratios):.3g}" if its else "no common checkpoint")
    return conclude(bool(its) and len(wins) == len(its), arms, measured)


@CLAIM_RULES.register()
def degrades(cx: ClaimContext, exp: str, dataset: str, solvers: list[str], fastest: str,
             factor: float = 1.5) -> Verdict:
    """'Their performance degrades with additional training, X especially rapidly': each
    learner's last training objective is at least ``factor`` times its best, and ``fastest``
    degrades by the largest factor."""
    cs = curves(cx, exp, dataset, solvers)
    arms = [a for a, _ in cs.values()]
    g = gate(*arms)
    if g:
        return g
    grow = {}
    for s, (_a, pts) in cs.items():
        fs = [f for _, f, _ in pts if f is not None]
        grow[s] = fs[-1] / min(fs)
    ok = all(v >= factor for v in grow.values()) and max(grow, key=grow.get) == fastest
    measured = "; ".join(f"{cs[s][0].label}: last / best training objective {v:.3g}"
                         for s, v in grow.items())
    return conclude(ok, arms, measured, f"criterion: each >= {factor:g}, {fastest} the largest")


@CLAIM_RULES.register()
def absolute_time(cx: ClaimContext, ours: dict, paper_s: list[float], machine: str,
                  metric: str = "train.wall_s", span: str = "") -> Verdict:
    """A time in seconds on the authors' machine: not testable here (another machine and
    decade); ours is measured over the same span and stated beside it."""
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    ts = [value(r.record, metric) for r in a.chosen]
    ts = [t for t in ts if t is not None]
    lo, hi = min(paper_s), max(paper_s)
    measured = (f"ours {min(ts) * 1e3:.1f} to {max(ts) * 1e3:.1f} ms per fit ({len(ts)} fits; {span}) "
                f"against the paper's {lo:g}" + (f"-{hi:g}" if hi != lo else "") + " s")
    v = conclude(True, [a], measured)
    why = f"absolute seconds of {machine}; compared as ratios between programs in other rows"
    return Verdict("stand-in" if v.status == "stand-in" else "not testable here", measured=measured,
                   why=(v.why + "; " if v.status == "stand-in" else "") + why, runs=v.runs, tags=v.tags)


@CLAIM_RULES.register()
def beats_binary_svm(cx: ClaimContext, problems: list[dict], rankers: list[str],
                     svm: str = "class_weighted_svm", metric: str = "auc") -> Verdict:
    """'The ROC area of all ranking methods exceeded that of a class-weighted binary SVM': on each
    problem ({exp, dataset, select_on}) every ranking method's mean test ROC area (over folds)
    is above the SVM's; an exact sign-flip test over the folds per method (single-query
    problems: one ROC area per fold), Holm over the claim's tests.  Runs read that did not
    converge (``train.converged`` false) are counted per side in the measured text, and the
    baseline's in the why: a verdict resting on them says so."""
    from rankbench.significance import exact_randomization_p_value, holm

    parts, tests = [], []
    svm_bad, svm_read = 0, 0
    for prob in problems:
        base = {"exp": prob["exp"], "dataset": prob["dataset"], "select_on": prob.get("select_on")}
        s_arm = arm(cx, {**base, "solver": svm, "label": "class-weighted SVM"})
        r_arms = [arm(cx, {**base, "solver": r, "label": r}) for r in rankers]
        g = gate(s_arm, *r_arms)
        if g:
            parts.append((s_arm.dataset_label or prob["dataset"], g))
            continue
        sv = {r.spec["fold"]: value(r.record, f"test.{metric}") for r in s_arm.chosen}
        texts, ok = [], True
        for a in r_arms:
            rv = {r.spec["fold"]: value(r.record, f"test.{metric}") for r in a.chosen}
            folds = sorted(f for f in set(sv) & set(rv) if sv[f] is not None and rv[f] is not None)
            d = sum(rv[f] - sv[f] for f in folds) / len(folds)
            p = exact_randomization_p_value([rv[f] for f in folds], [sv[f] for f in folds]) \
                if len(folds) > 1 else float("nan")
            tests.append(p)
            ok &= d > 0
            texts.append(f"{a.solver} {d:+.4f}" + (f" (p {p:.2g})" if len(folds) > 1 else "")
                         + not_converged_text(a.chosen))
        svm_mean = sum(sv.values()) / len(sv)
        svm_bad += len(not_converged(s_arm.chosen))
        svm_read += len(s_arm.chosen)
        parts.append((s_arm.dataset_label, conclude(
            ok, [s_arm, *r_arms], f"class-weighted SVM ROC area {svm_mean:.4f}"
            f"{not_converged_text(s_arm.chosen)}; each ranking method minus it: " + ", ".join(texts),
            f"exact sign-flip over {len(sv)} fold(s) per method")))
    v = parts[0][1] if len(parts) == 1 else merge(parts)
    ps = [p for p in tests if p == p]
    if len(parts) > 1 and ps:
        v.test += f"; Holm over the {len(ps)} tests: smallest adjusted p {min(holm(ps)):.2g}"
    if svm_bad:
        v.why = "; ".join(filter(None, [
            v.why, f"{svm_bad} of the {svm_read} class-weighted SVM runs read did not converge "
                   "(stopped short of their tolerance): the comparison is with where they stopped"]))
    return v

