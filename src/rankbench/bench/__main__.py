"""`python -m rankbench.bench [part ...] [--quick] [--out DIR]`: run benchmarks, print and store their rows.

Everything a run writes goes under ``--out`` (default ``results/_scratch/bench``, which git
ignores; ``make bench`` asks for the committed ``results/bench``): each part's rows as
``<part>.json`` (never committed) and its Markdown tables as ``<part>.md`` (rows grouped by the
columns they fill, so no table carries an empty column), the figures a part draws
(``accuracy_<problem>.png``), ``SUMMARY.md`` (one table of the targets, read back from the
parts' committed ``.md`` tables, so a run of one part keeps every other part's targets; then
every part's latest section, each with its own commit, time and load; the README cites it
instead of copying numbers that would drift) and ``index.html`` (the same as a page, with the
figures).
``--config PART=PATH`` gives a part that reads a config (``accuracy``: conf/bench/accuracy.yaml)
another file.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

from rankbench.bench import PARTS

DEFAULT_OUT = "results/_scratch/bench"


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmark parts (all by default); write results/bench/<part>.json and .md,
    then SUMMARY.md from every part's latest .md plus one table of the targets (rows with a goal)."""
    ap = argparse.ArgumentParser(prog="python -m rankbench.bench")
    parts = PARTS.names()
    ap.add_argument("parts", nargs="*", default=parts, help=f"subset of {', '.join(parts)}")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--out", default=DEFAULT_OUT,
                    help=f"folder for every file the run writes (default {DEFAULT_OUT}, not "
                         "committed; `make bench` passes results/bench)")
    ap.add_argument("--config", action="append", default=[], metavar="PART=PATH",
                    help="a config file for a part that reads one (accuracy)")
    args = ap.parse_args(argv)
    configs = {}
    for item in args.config:
        part, sep, path = item.partition("=")
        if not sep or part not in parts:
            ap.error(f"--config takes PART=PATH with PART one of {', '.join(parts)}, got {item!r}")
        configs[part] = path
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import inspect
    import os
    import time

    import pandas as pd

    from rankbench.sysinfo import git_commit, machine_info

    info = machine_info()
    for part in args.parts:
        if part not in parts:
            ap.error(f"unknown benchmark part {part!r}; known: {', '.join(parts)}")
    for part in args.parts:
        run = PARTS.get(part)
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        load0 = os.getloadavg()[0]
        params = inspect.signature(run).parameters
        kwargs = {"quick": args.quick}
        if "out" in params:
            kwargs["out"] = out
        if "config" in params:
            kwargs["config"] = configs.pop(part, None)
        elif part in configs:
            ap.error(f"part {part} reads no config")
        rows = run(**kwargs)
        meta = {"machine": platform.node(), "processor": platform.processor(),
                "jit_cpu": info.get("jit_cpu"),
                "python": sys.version.split()[0], "quick": args.quick, "commit": git_commit(),
                "started": started}
        (out / f"{part}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"\n== {part} ==")
        frame = pd.DataFrame(rows)
        print(frame.to_string(index=False))
        head = (f"## {part}\n\n`python -m rankbench.bench {part}{' --quick' if args.quick else ''}` "
                f"from {started} to {time.strftime('%H:%M UTC', time.gmtime())} at commit "
                f"{meta['commit']}, on {info.get('cpu_model') or platform.processor()} "
                f"({os.cpu_count()} cores; numba compiles for {info.get('jit_cpu')}); 1-minute load average {load0:.2f} at the start, "
                f"{os.getloadavg()[0]:.2f} at the end.\n\n")
        (out / f"{part}.md").write_text(head + "\n\n".join(_filled_tables(rows)) + "\n")
        targets = [r for r in rows if "goal" in r]
        if targets:
            print(f"\n== {part}: targets ==")
            print(_target_frame(targets).to_string(index=False))
    _write_summary(out)
    _write_html(out)
    print(f"\nwrote {out}/: " + ", ".join(sorted(p.name for p in out.iterdir() if p.is_file())))
    return 0


def _target_frame(rows: list[dict]):
    import pandas as pd

    cols = ["target", "measured", "reference", "reference_value", "ratio", "goal", "met",
            "ratio_of_minima", "paired_ratios", "paired_median", "balanced_pairs", "ratio_low",
            "ratio_high", "process_pairs"]
    counts = ("paired_ratios", "balanced_pairs", "process_pairs")
    frame = pd.DataFrame(rows)
    for col in cols[cols.index("met") + 1:]:  # load's paired rows
        if col in frame.columns:
            frame[col] = ["" if v is None or v != v else (int(v) if col in counts else v)
                          for v in frame[col]]
    frame["goal"] = [("\u2265 " if r.get("higher_is_better") else "\u2264 ") + f"{r['goal']:g}"
                     for r in rows]
    return frame[[c for c in cols if c in frame.columns]]


def _cell_value(text: str):
    """A cell of a table ``_markdown`` wrote, as the value it showed: "" -> None, True / False,
    an integer, a float (``%.4g``, nan, inf), else the text."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _cells(line: str) -> list[str]:
    """The cells of one row of a Markdown table ``_markdown`` wrote."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def md_targets(text: str) -> list[dict]:
    """The target rows (those with a ``goal``) of a part's .md, read back from its tables: the
    record that is committed (the .json is not, and a new machine has none), with each value as
    shown there (4 significant digits, which is what SUMMARY.md prints)."""
    rows: list[dict] = []
    table: list[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if len(table) > 2:
            head = _cells(table[0])
            for body in table[2:]:
                row = {k: _cell_value(v) for k, v in zip(head, _cells(body), strict=True)}
                if row.get("goal") is not None:
                    rows.append(row)
        table = []
    return rows


def _write_summary(out: Path) -> None:
    """SUMMARY.md: every part's latest section (its own run, commit and load) and, first, the
    targets of every part, read back from the part's .md (``md_targets``): the JSON stays
    uncommitted and is gone on a fresh machine, so a run of one part there would drop every
    other part's targets from the table."""
    sections, targets = [], []
    for part in PARTS.names():
        md = out / f"{part}.md"
        if md.exists():
            text = md.read_text()
            sections.append(text)
            targets += [dict(r, part=part) for r in md_targets(text)]
    text = ("# make bench\n\nGenerated by `python -m rankbench.bench`: one section per benchmark part, "
            "each from its own latest run (command, commit and the machine's load are in its first "
            "line; above a load of about 0.5 other work shared the cores: read the ratios, not the "
            "seconds).\n")
    if targets:
        text += ("\n## Targets\n\nEach target beside its reference, measured in the same run; "
                 "`ratio` = measured / reference, `goal` the ratio asked for; where `paired_ratios` "
                 "is given (the `load` part), that many ratios of the fit and its reference were "
                 "timed back to back, in reversed order every other repeat (`paired_median`: their "
                 "median); where `balanced_pairs` is given, `ratio` is the median of that many "
                 "geometric means of a forward and the next, reversed, repeat's ratios (which "
                 "cancels a penalty for the fit that runs first after the other process), else "
                 "the median of the paired ratios; `ratio_low` to `ratio_high` a "
                 "distribution-free interval for that median (order statistics; "
                 "95 % where there are 6 or more values, the whole range below that: its coverage "
                 "is in the part's table), and `ratio_of_minima` = measured / "
                 "reference, the minima over the same repeats.\n\n"
                 + _markdown(_target_frame(targets)) + "\n")
    (out / "SUMMARY.md").write_text(text + "\n" + "\n".join(sections))


def _is_empty(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or v == ""


def _filled_tables(rows: list[dict]) -> list[str]:
    """Markdown tables of a part's rows, one per set of columns the rows fill (in order of first
    appearance), each showing only those columns; the constant ``part`` column is left out."""
    import pandas as pd

    groups: dict[tuple[str, ...], list[dict]] = {}
    for r in rows:
        cols = tuple(k for k, v in r.items() if k != "part" and not _is_empty(v))
        groups.setdefault(cols, []).append(r)
    return [_markdown(pd.DataFrame([{c: r[c] for c in cols} for r in group], columns=list(cols)))
            for cols, group in groups.items()]


def _write_html(out: Path) -> None:
    """index.html: SUMMARY.md as a page (targets table first, then each part's tables) with the
    figures of ``out`` under their part's section."""
    import html

    text = (out / "SUMMARY.md").read_text()
    figures = sorted(p.name for p in out.glob("*.png"))
    body, table, section = [], [], None

    def inline(s: str) -> str:
        parts = html.escape(s).split("`")
        return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))

    def flush_table() -> None:
        if not table:
            return
        head, rows = table[0], table[2:]
        body.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in _cells(head))
                    + "</tr></thead><tbody>" + "".join(
                        "<tr>" + "".join(f"<td>{inline(c)}</td>" for c in _cells(r)) + "</tr>"
                        for r in rows) + "</tbody></table>")
        table.clear()

    def flush_figures(part: str | None) -> None:
        for name in [f for f in figures if part and f.startswith(part + "_")]:
            body.append(f'<figure><img src="{name}" alt="{name}"><figcaption>{name}</figcaption></figure>')
            figures.remove(name)

    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush_table()
        if line.startswith("## "):
            flush_figures(section)
            section = line[3:].strip()
            body.append(f'<h2 id="{html.escape(section)}">{inline(section)}</h2>')
        elif line.startswith("# "):
            body.append(f"<h1>{inline(line[2:])}</h1>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    flush_table()
    flush_figures(section)
    if figures:
        body.append("<h2>Other figures</h2>")
        body += [f'<figure><img src="{n}" alt="{n}"><figcaption>{n}</figcaption></figure>' for n in figures]
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;font-size:12px;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             "figure{display:inline-block;margin:0.5em}img{max-width:560px}")
    (out / "index.html").write_text(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rankbench benchmarks</title>"
        f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _markdown(frame) -> str:
    cols = [str(c) for c in frame.columns]

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "/")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
