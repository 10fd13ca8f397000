"""Captions: what data, folds, hyper-parameters, machine and commit an artefact comes from."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rankbench.report.context import RenderContext
from rankbench.report.records import PlannedRun, not_converged


def _fmt_values(vals: list[Any]) -> str:
    uniq = []
    for v in vals:
        if v not in uniq:
            uniq.append(v)
    if len(uniq) > 8:
        return f"{len(uniq)} values from {min(uniq, key=str)} to {max(uniq, key=str)}"
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in uniq)


def params_summary(runs: list[PlannedRun]) -> str:
    """Per solver, the grid of hyper-parameters its runs use, e.g. ``prsvm: C in {1e-4}``."""
    from rankbench.spec import PRESENTATION_PARAMS

    by_solver: dict[str, dict[str, list]] = {}
    for r in runs:
        d = by_solver.setdefault(r.spec["solver"], {})
        for k, v in r.spec["params"].items():
            if v is None or k in PRESENTATION_PARAMS:  # the solver's default / console output
                continue
            if isinstance(v, list):
                v = f"[{len(v)} values]"
            d.setdefault(k, []).append(v)
    parts = []
    for s, d in by_solver.items():
        inner = "; ".join(f"{k} in {{{_fmt_values(v)}}}" for k, v in d.items())
        parts.append(f"{s}: {inner}" if inner else s)
    return " | ".join(parts)


def environment_summary(runs: list[PlannedRun]) -> str:
    """Machines and commits recorded by the runs used (most common first)."""
    machines: Counter = Counter()
    commits: Counter = Counter()
    for r in runs:
        if r.ok:
            env = r.record.get("env") or {}
            m = env.get("machine")
            if isinstance(m, dict):
                m = ", ".join(f"{k}={v}" for k, v in m.items()
                              if k in ("hostname", "node", "cpu_model", "jit_cpu", "cpu_count", "memory_gb",
                                       "platform"))
            machines[str(m or "unknown machine")] += 1
            commits[str(env.get("git_commit") or "unknown")[:12]] += 1
    if not machines:
        return "no stored runs yet"
    m = "; ".join(f"{k} ({n} runs)" for k, n in machines.most_common(3))
    c = ", ".join(f"{k} ({n})" for k, n in commits.most_common(4))
    v = next((r.record.get("env", {}).get("versions") for r in runs if r.ok), None) or {}
    libs = ", ".join(f"{k} {v[k]}" for k in ("python", "numpy", "numba", "scipy", "lightgbm") if k in v)
    return f"machine: {m}. commit: {c}" + (f". versions: {libs}" if libs else "")


def load_summary(runs: list[PlannedRun]) -> str:
    """Whether the machine was busy while the runs used were timed: the runs with another process
    running when they started or finished (``env.load.*.busy_cores``) and the highest 1-minute
    load average recorded (which counts the run itself)."""
    recorded = busy = 0
    most_cores, top_load = 0, 0.0
    for r in runs:
        load = (r.record.get("env") or {}).get("load") if r.ok else None
        if not isinstance(load, dict):
            continue
        recorded += 1
        ends = [v for v in (load.get("start"), load.get("finish")) if isinstance(v, dict)]
        cores = max((int(v.get("busy_cores") or 0) for v in ends), default=0)
        most_cores = max(most_cores, cores)
        busy += cores > 0
        top_load = max([top_load] + [float(v["load_1min"]) for v in ends
                                     if v.get("load_1min") is not None])
    if not recorded:
        return "Load: not recorded by these runs"
    head = (f"Load: idle machine, no other process running when any of the {recorded} runs "
            f"started or finished" if not busy else
            f"Load: LOADED machine, other processes running on up to {most_cores} core(s) when "
            f"{busy} of the {recorded} runs started or finished (their times include that)")
    return head + f"; 1-minute load average up to {top_load:.2f}, the runs themselves included"


def build_caption(ctx: RenderContext, runs: list[PlannedRun], extra: list[str] | None = None) -> str:
    """The standard caption: source, data (with substitutions), folds, params, environment."""
    lines = [f"Source: {ctx.paper.citation}."]
    if ctx.artefact.paper_artefact:
        lines[0] += f" Reproduces {ctx.artefact.paper_artefact}."
    for tag in ctx.artefact.experiments:
        plan = ctx.plans[tag]
        lines.append(f"Experiment `{tag}` (store tag {plan.tag}): {plan.description}")
        used = []
        for res in plan.resolutions.values():
            if not res.present:
                used.append(f"{res.label}: data not present")
            elif res.substitution:
                used.append(f"{res.label}: SUBSTITUTED ({res.substitution})")
            else:
                v = f" ({res.variant})" if res.variant else ""
                used.append(f"{res.label}{v}: real data")
        if used:
            lines.append("Data: " + "; ".join(used) + ".")
        folds = sorted({r.spec["fold"] for r in plan.runs})
        if folds:
            lines.append(f"Folds: {', '.join(map(str, folds))}.")
        if plan.runs:
            lines.append(f"Hyper-parameters: {params_summary(plan.runs)}.")
        if plan.pending_solvers:
            lines.append("Not run here (the solver cannot run on this machine, e.g. a peer not "
                         f"built): {', '.join(plan.pending_solvers)}.")
        done = sum(r.ok for r in plan.runs)
        failed = sum(r.status == "failed" for r in plan.runs)
        skipped = sum(r.status == "skipped" for r in plan.runs)
        lines.append(f"Runs: {done} ok of {len(plan.runs)} planned" + (f", {failed} failed" if failed else "")
                     + (f", {skipped} skipped" if skipped else "") + ".")
        bad = not_converged(plan.runs)
        if bad:
            where = sorted({f"{r.spec['solver']} ({r.resolution.label} fold {r.spec['fold']})"
                            for r in bad})
            lines.append(f"NOT CONVERGED: {len(bad)} run(s) stopped short of their solver's accuracy "
                         f"(marked †): {', '.join(where[:8])}" + (" ..." if len(where) > 8 else "") + ".")
    if ctx.quick:
        lines.append("QUICK MODE: reduced grids on small synthetic data; not comparable to the paper.")
    lines.append(environment_summary(runs) + ".")
    lines.append(load_summary(runs) + ".")
    lines.extend(extra or [])
    return "\n".join(lines)
