"""Writing artefacts: Markdown + CSV tables, PNG + PDF figures (each with its caption)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from rankbench.report.context import RenderContext

MISSING = "—"


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


def write_table(ctx: RenderContext, rows: list[dict[str, Any]], columns: list[str],
                caption: str, notes: list[str] | None = None) -> list[Path]:
    """Write ``<id>.md`` (title, table, caption) and ``<id>.csv`` (full precision)."""
    md = ctx.path(".md")
    parts = [f"# {ctx.artefact.title}", "", markdown_table(rows, columns), ""]
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


def write_figure(ctx: RenderContext, fig, caption: str, data_rows: list[dict[str, Any]] | None = None,
                 notes: list[str] | None = None) -> list[Path]:
    """Save ``fig`` as PNG and PDF, its caption as ``<id>.md`` and the plotted numbers as CSV."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    for ax in fig.axes:  # minor tick labels on short log ranges overlap ("3x10^0 4x10^0")
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                axis.set_minor_formatter(NullFormatter())
    png, pdf, md = ctx.path(".png"), ctx.path(".pdf"), ctx.path(".md")
    fig.savefig(png, dpi=130, bbox_inches="tight")
    fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    parts = [f"# {ctx.artefact.title}", "", f"![{ctx.artefact.id}]({png.name})", ""]
    if notes:
        parts += [f"- {n}" for n in notes] + [""]
    parts += ["```text", caption, "```", ""]
    md.write_text("\n".join(parts))
    files = [png, pdf, md]
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


def new_figure(n_rows: int, n_cols: int, width: float = 4.2, height: float = 3.3):
    """A matplotlib figure with an ``n_rows x n_cols`` grid of axes (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows), squeeze=False)
    return fig, axes


def empty_panel(ax, text: str) -> None:
    """Mark an axes as having nothing to show (e.g. data not present, solver pending)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10,
            color="0.35", wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])
