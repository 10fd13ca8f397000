"""Renderers, one module per paper (plus the leaderboard), by the name experiment configs use.

A renderer is ``f(RenderContext) -> Artefact``; ``report.renderer`` in an experiment config
names one of ``RENDERERS`` (the function's own name).
"""

from rankbench.report.renderers import chapelle, leaderboard, lee_lin, sculley, welleck

RENDERERS = {f.__name__: f for f in (
    chapelle.ranksvm_time_table, chapelle.c_sweep_figure, chapelle.auc_scaling_figure,
    chapelle.dataset_stats_table, chapelle.letor_ohsumed_figure,
    leaderboard.leaderboard_table,
    lee_lin.cg_convergence_figure, lee_lin.dual_sparsity_table,
    sculley.letor_map_figure, sculley.rcv1_auc_table, sculley.spd_objective_figure,
    sculley.peer_map_table,
    welleck.selected_metric_table, welleck.class_auc_table, welleck.precision_at_k_figure,
    welleck.training_time_table,
)}


def get_renderer(name: str):
    """The renderer called ``name``; ValueError listing the known ones otherwise."""
    if name not in RENDERERS:
        raise ValueError(f"unknown renderer {name!r}; known: {', '.join(sorted(RENDERERS))}")
    return RENDERERS[name]
