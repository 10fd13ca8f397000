"""Writing artefacts: Markdown + CSV tables, PNG + PDF figures (each with its caption)."""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path
from typing import Any

from rankbench.report.context import RenderContext

MISSING = "—"
# matplotlib's PDF font subsetting logs one INFO line per table it prunes ("maxp pruned");
# under Hydra's INFO job logging those would flood the reproduce output
logging.getLogger("fontTools").setLevel(logging.WARNING)


def fmt(v: Any, digits: int = 4) -> str:
    """A table cell: floats to ``digits`` significant digits, None / NaN as an em dash."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return MISSING
        if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-5):
            return f"{v:.{digits - 1}e}"
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.2g}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return str(v).replace("|", "/").replace("\n", " ")


def markdown_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A GitHub Markdown table of ``rows`` restricted to ``columns``."""
    head = "| " + " | ".join(columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    def cell(r: dict[str, Any], c: str) -> str:
        mark = " †" if c in r.get("_flag", ()) and r.get(c) is not None else ""
        return fmt(r.get(c)) + mark

    body = ["| " + " | ".join(cell(r, c) for c in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def stand_in_title(ctx: RenderContext) -> str:
    """The artefact's title, naming any stand-in data its experiments ran on
    ('...: RCV1 E311 [stand-in data: synthetic stand-in for RCV1 E311]'), so a table or figure
    never shows a stand-in's numbers under the absent data set's name alone."""
    from rankbench.report.labels import data_title

    seen: list[str] = []
    for tag in ctx.artefact.experiments:
        plan = ctx.plans.get(tag)
        for res in (plan.resolutions.values() if plan is not None else ()):
            if res.present and getattr(res, "substitution", None):
                t = data_title(res)
                if t not in seen:
                    seen.append(t)
    title = ctx.artefact.title
    return f"{title} [stand-in data: {'; '.join(seen)}]" if seen else title


def write_table(ctx: RenderContext, rows: list[dict[str, Any]], columns: list[str],
                caption: str, notes: list[str] | None = None) -> list[Path]:
    """Write ``<id>.md`` (title, table, caption) and ``<id>.csv`` (full precision)."""
    md = ctx.path(".md")
    parts = [f"# {stand_in_title(ctx)}", "", markdown_table(rows, columns), ""]
    if notes:
        parts += [f"- {n}" for n in notes] + [""]
    parts += ["```text", caption, "```", ""]
    md.write_text("\n".join(parts))
    csv_path = ctx.path(".csv")
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in columns})
    return [md, csv_path]


# Figures a paper author can use at single-column width: 8-9 pt text at 3.3 in per panel,
# TrueType fonts embedded in the PDF (type 42), no figure-wide clutter.
PAPER_STYLE = {
    "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 9, "lines.linewidth": 1.3,
    "lines.markersize": 4, "axes.grid": True, "grid.alpha": 0.3, "pdf.fonttype": 42,
    "ps.fonttype": 42, "savefig.dpi": 200,
}
# Line styles cycled with the colours, so curves stay apart in grey print too.
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def coinciding_lines(fig) -> list[str]:
    """Restyle every plotted line that lies on an earlier one (dashed, hollow markers), so no
    curve hides under another, and return a note per such pair for the caption."""
    import numpy as np

    notes = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        for i, a in enumerate(lines):
            xa, ya = (np.asarray(v, dtype=float) for v in a.get_data())
            for b in lines[i + 1:]:
                xb, yb = (np.asarray(v, dtype=float) for v in b.get_data())
                if xa.shape == xb.shape and xa.size and np.allclose(xa, xb) and np.allclose(
                        ya, yb, rtol=1e-6, atol=1e-9, equal_nan=True):
                    b.set_linestyle((0, (4, 3)))
                    b.set_markerfacecolor("none")
                    b.set_linewidth(max(b.get_linewidth(), 1.6))
                    b.set_zorder(a.get_zorder() + 1)
                    note = (f"{b.get_label()} coincides with {a.get_label()} in '{ax.get_title()}' "
                            "(drawn dashed over it, hollow markers).")
                    if note not in notes:
                        notes.append(note)
    return notes


def legend_outside(fig) -> None:
    """One legend for the whole figure, below the panels (never over the data)."""
    handles, labels = [], []
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=min(4, len(labels)), frameon=False)


def write_figure(ctx: RenderContext, fig, caption: str, data_rows: list[dict[str, Any]] | None = None,
                 notes: list[str] | None = None) -> list[Path]:
    """Save ``fig`` as PNG and PDF, its caption as ``<id>.md`` and the plotted numbers as CSV.

    ``fig=None``: nothing to draw (no data present); the caption and notes say why, and no
    empty figure is written.  Lines that coincide are restyled and noted; the legend goes
    below the panels.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    notes = list(notes or [])
    png, pdf, md = ctx.path(".png"), ctx.path(".pdf"), ctx.path(".md")
    files = [md]
    parts = [f"# {stand_in_title(ctx)}", ""]
    if fig is not None:
        for ax in fig.axes:  # minor tick labels on short log ranges overlap ("3x10^0 4x10^0")
            for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
                if scale == "log":
                    axis.set_minor_formatter(NullFormatter())
        notes += coinciding_lines(fig)
        legend_outside(fig)
        fig.savefig(png, dpi=200, bbox_inches="tight")
        fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None})
        plt.close(fig)
        parts += [f"![{ctx.artefact.id}]({png.name})", ""]
        files = [png, pdf, md]
    else:
        for stale in (png, pdf):  # a figure from an earlier run with data would mislead
            stale.unlink(missing_ok=True)
        parts += ["No figure: none of its data is present (see the caption).", ""]
    if notes:
        parts += [f"- {n}" for n in notes] + [""]
    parts += ["```text", caption, "```", ""]
    md.write_text("\n".join(parts))
    if data_rows:
        cols: list[str] = []
        for r in data_rows:
            cols += [k for k in r if k not in cols]
        csv_path = ctx.path(".csv")
        with csv_path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            for r in data_rows:
                w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in cols})
        files.append(csv_path)
    return files


def new_figure(n_rows: int, n_cols: int, width: float = 3.3, height: float = 2.6):
    """A paper-style matplotlib figure with an ``n_rows x n_cols`` grid of axes (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from cycler import cycler

    plt.rcParams.update(PAPER_STYLE)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"][:len(_MARKERS)]
    plt.rcParams["axes.prop_cycle"] = (cycler(color=colors)
                                       + cycler(marker=list(_MARKERS[:len(colors)]))
                                       + cycler(linestyle=[_STYLES[i % len(_STYLES)]
                                                           for i in range(len(colors))]))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                             squeeze=False, layout="constrained")
    return fig, axes


def left_out(labels: dict[str, str]) -> str | None:
    """Caption sentence for datasets (label -> reason) left out of a figure, or None."""
    if not labels:
        return None
    return "Left out (nothing to draw): " + "; ".join(f"{k} ({v})" for k, v in labels.items()) + "."




def mark_not_converged(ax, xs, ys, flags) -> bool:
    """Ring the points of a curve whose runs stopped short of their solver's accuracy (red open
    circles, one legend entry 'not converged'); True when any was marked."""
    pts = [(x, y) for x, y, f in zip(xs, ys, flags, strict=True) if f and y is not None]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="none", marker="o",
                markersize=8, markerfacecolor="none", markeredgecolor="red", markeredgewidth=1.0,
                label="not converged (a run stopped at its cap)", zorder=6)
    return bool(pts)
