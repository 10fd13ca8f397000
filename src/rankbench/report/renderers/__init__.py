"""Renderers, one module per paper (plus the leaderboard); importing registers them."""

from rankbench.report.renderers import chapelle, leaderboard, lee_lin, sculley, welleck

__all__ = ["chapelle", "leaderboard", "lee_lin", "sculley", "welleck"]
