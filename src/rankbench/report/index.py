"""``results/README.md``: every artefact with its status and files, then paper against ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankbench.report.context import Artefact
from rankbench.report.output import fmt, markdown_table


def comparison_table(artefacts: list[Artefact]) -> list[dict[str, Any]]:
    """All paper-vs-ours rows of all artefacts, prefixed with the artefact id."""
    rows = []
    for a in artefacts:
        for c in a.comparisons:
            rows.append({"artefact": a.id, **{k: v for k, v in c.items() if k != "artefact"}})
    return rows


STATUS_LEGEND = ("Status: ok = every planned run stored; stand-in = every planned run stored, "
                 "but on a stand-in for absent data (named in the caption and title); partial = "
                 "some runs or datasets missing (see the artefact's caption); pending = a solver "
                 "not in this build or nothing run yet; data not present = no dataset of the "
                 "artefact under the data root; failed = the renderer raised (message below).")
LEDGER_SHOWN = ["id", "section", "claim", "verdict", "measured", "test", "why"]


def by_paper(artefacts: list[Artefact]) -> dict[str, list[Artefact]]:
    """Artefacts grouped by paper, in the order they come (the report's paper order)."""
    out: dict[str, list[Artefact]] = {}
    for a in artefacts:
        out.setdefault(a.paper, []).append(a)
    return out


def claims_overview(artefacts: list[Artefact]) -> list[dict[str, Any]]:
    """One row per paper with a ledger: its verdict counts."""
    from rankbench.report.ledger import VERDICTS, counts

    rows = []
    for a in artefacts:
        if a.kind == "claims":
            c = counts(a.ledger)
            rows.append({"paper": a.title.split(": every claim")[0], "claims": len(a.ledger),
                         **{v: c.get(v, 0) for v in VERDICTS}})
    return rows


def write_index(out_dir: str | Path, artefacts: list[Artefact], header: list[str]) -> Path:
    """Write ``<out_dir>/README.md``: per paper its verdict counts, its claims ledger and its
    artefacts, then every paper-vs-ours number; returns its path."""
    from rankbench.report.ledger import VERDICTS

    out_dir = Path(out_dir)
    lines = ["# Reproduced tables and figures", "", *header, ""]
    if (out_dir / "DISCUSSION.md").is_file():  # the reading of the committed full run
        lines += ["Every claim that does not hold here is stated with its numbers in "
                  "[DISCUSSION.md](DISCUSSION.md) (generated from the ledgers below).", ""]
    overview = claims_overview(artefacts)
    if overview:
        lines += ["## Claims at a glance", "", markdown_table(overview, ["paper", "claims", *VERDICTS]),
                  ""]
    for key, arts in by_paper(artefacts).items():
        ledger = next((a for a in arts if a.kind == "claims"), None)
        lines += [f"## {ledger.title.split(': every claim')[0] if ledger else key}", ""]
        if ledger is not None:
            links = ", ".join(f"[{q.suffix[1:]}]({q.relative_to(out_dir).as_posix()})" for q in ledger.files)
            lines += [f"**Verdicts: {ledger.caption}.** Ledger: {links} (rules: "
                      f"`experiments/{key}/claims.csv`).", "",
                      markdown_table([r.row() for r in ledger.ledger], LEDGER_SHOWN), ""]
        lines += ["| artefact | kind | status | files |", "|---|---|---|---|"]
        for a in arts:
            if a.kind == "claims":
                continue
            links = ", ".join(f"[{q.suffix[1:]}]({q.relative_to(out_dir).as_posix()})" for q in a.files)
            lines.append(f"| {a.title} | {a.kind} | {a.status} | {links or '—'} |")
        lines.append("")
    lines += [STATUS_LEGEND, ""]
    failed = [a for a in artefacts if a.status == "failed"]
    if failed:
        lines += ["## Renderer and rule failures", ""]
        for a in failed:
            lines += [f"### {a.id}", "", "```text", a.caption, *(a.notes[:1]), "```", ""]
    rows = comparison_table(artefacts)
    lines += ["## Paper against ours", "",
              "Every number the papers publish that an artefact reproduces; `difference` = ours - "
              "paper for scores, `ratio` = ours / paper for times (different machines); no "
              "difference is computed where our number comes from a stand-in (`data`).", ""]
    if rows:
        cols = ["artefact", "dataset", "data", "method", "metric", "paper", "ours", "difference",
                "ratio", "reference"]
        for r in rows:
            if r.get("approximate"):
                r["paper"] = f"~{fmt(r['paper'])} (approx.)"
        lines.append(markdown_table(rows, cols))
    else:
        lines.append("(no stored runs yet)")
    lines.append("")
    html = write_html(out_dir, artefacts, header)
    lines += [f"The same, as one self-contained page (figures embedded, no network needed): "
              f"[{html.name}]({html.name}).", ""]
    path = out_dir / "README.md"
    path.write_text("\n".join(lines))
    return path


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2.2em;
border-bottom:1px solid #ccc}table{border-collapse:collapse;font-size:.85em;margin:.8em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}th{background:#f3f3f3}
pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap;font-size:.8em}img{max-width:100%}
.status{font-weight:bold}.ok{color:#17692a}.partial,.pending{color:#8a5a00}
.failed{color:#a11}.stand-in{color:#5a4a8a}.nodata{color:#666}#images{font-size:.8em;color:#666}"""
# Counts the figures that loaded (the browser test reads it back from the page).
_SCRIPT = """window.addEventListener('load',function(){var im=document.images,n=0;
for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0){n++;}}
document.body.setAttribute('data-images-loaded',n+'/'+im.length);
document.getElementById('images').textContent=n+' of '+im.length+' figures loaded';});"""


def _inline(text: str) -> str:
    import html as h
    import re

    t = h.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', t)


def markdown_to_html(md: str, folder: Path) -> str:
    """The Markdown the report writes (headings, tables, bullets, images, text blocks) as HTML;
    images are embedded as data URIs so the page needs nothing else."""
    import base64
    import html as h

    out, table, bullets, code = [], [], [], None

    def flush():
        nonlocal table, bullets
        if table:
            head, *body = [r for r in table if not set(r.replace("|", "").strip()) <= set("-: ")]
            cells = lambda r: [c.strip() for c in r.strip().strip("|").split("|")]  # noqa: E731
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in cells(head))
                       + "</tr>" + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells(r))
                                           + "</tr>" for r in body) + "</table>")
        if bullets:
            out.append("<ul>" + "".join(f"<li>{_inline(b)}</li>" for b in bullets) + "</ul>")
        table, bullets = [], []

    for line in md.splitlines():
        if code is not None:
            if line.startswith("```"):
                out.append(f"<pre>{h.escape(chr(10).join(code))}</pre>")
                code = None
            else:
                code.append(line)
            continue
        if line.startswith("```"):
            flush()
            code = []
        elif line.startswith("|"):
            table.append(line)
        elif line.startswith("- "):
            bullets.append(line[2:])
        else:
            flush()
            if line.startswith("!["):
                alt, src = line[2:].split("](", 1)
                img = folder / src.rstrip(")")
                if img.is_file():
                    data = base64.b64encode(img.read_bytes()).decode()
                    out.append(f'<img alt="{h.escape(alt)}" src="data:image/png;base64,{data}">')
                else:
                    out.append(f'<img alt="{h.escape(alt)} (file missing)" src="{h.escape(src)}">')
            elif line.startswith("#"):
                level = min(6, len(line) - len(line.lstrip("#")) + 1)
                out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
            elif line.strip():
                out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


def write_html(out_dir: Path, artefacts: list[Artefact], header: list[str]) -> Path:
    """``<out_dir>/index.html``: per paper its verdict counts and claims ledger, then every
    artefact (table, figure, caption, status), and every paper-vs-ours row, on one
    self-contained page."""
    import html as h

    from rankbench.report.ledger import VERDICTS

    body = ["<h1>Reproduced tables and figures</h1>", *[f"<p>{_inline(x)}</p>" for x in header],
            '<p id="images"></p>']
    overview = claims_overview(artefacts)
    if overview:
        body += ["<h2>Claims at a glance</h2>",
                 markdown_to_html(markdown_table(overview, ["paper", "claims", *VERDICTS]), out_dir)]
    body.append("<table><tr><th>artefact</th><th>kind</th><th>status</th></tr>")
    for a in artefacts:
        cls = {"data not present": "nodata"}.get(a.status, a.status)
        body.append(f'<tr><td><a href="#{h.escape(a.id)}">{h.escape(a.title)}</a></td>'
                    f'<td>{a.kind}</td><td class="status {cls}">{h.escape(a.status)}</td></tr>')
    body.append("</table>")
    for key, arts in by_paper(artefacts).items():
        ledger = next((a for a in arts if a.kind == "claims"), None)
        name = ledger.title.split(": every claim")[0] if ledger else key
        body.append(f'<h2 id="paper-{h.escape(key)}">{h.escape(name)}</h2>')
        if ledger is not None:
            body.append(f"<p><strong>Verdicts: {h.escape(ledger.caption)}.</strong></p>")
        for a in arts:
            md = next((p for p in a.files if p.suffix == ".md"), None)
            cls = {"data not present": "nodata"}.get(a.status, a.status)
            status = f'<p class="status {cls}">status: {h.escape(a.status)}</p>'
            body.append(f'<section id="{h.escape(a.id)}">')
            if md is not None and md.is_file():
                content = markdown_to_html(md.read_text(), md.parent)
                body.append(content.replace("<h2>", "<h3>").replace("</h2>", "</h3>")
                            .replace("<h1>", "<h3>").replace("</h1>", "</h3>" + status, 1))
            else:
                body.append(f"<h3>{h.escape(a.title)}</h3>{status}<pre>{h.escape(a.caption)}</pre>")
            body.append("</section>")
    rows = comparison_table(artefacts)
    body.append("<h2>Paper against ours</h2>")
    if rows:
        cols = ["artefact", "dataset", "data", "method", "metric", "paper", "ours", "difference",
                "ratio", "reference"]
        body.append(markdown_to_html(markdown_table(rows, cols), out_dir))
    else:
        body.append("<p>(no stored runs yet)</p>")
    page = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>rankbench: reproduced tables and figures</title>"
            f"<style>{_CSS}</style><script>{_SCRIPT}</script></head><body>"
            + "\n".join(body) + "</body></html>\n")
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
