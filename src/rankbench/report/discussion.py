"""results/DISCUSSION.md: hand-written reading of the results whose every number comes from the CSVs.

The text lives in ``experiments/discussion.md`` with placeholders, filled at report time
from the CSV files the report just wrote, so a sentence cannot drift from the data:

    {{ chapelle2010/chapelle2010_table3.csv | solver=prsvm,dataset=OHSUMED | ndcg@10 ours | .4f }}
    {{ welleck2016/welleck2016_fig2.csv | solver=lambdamart_mauc,k=1 | p@k_micro | vs solver=auc_svm,k=1 }}

    {{ chapelle2010/chapelle2010_table3.csv | solver=prsvm | ndcg@10 ours | minus solver=tron_tree | +.4f }}

The first gives a cell (the one row matching the filters; the last part is a format spec,
default ``.4g``); the second compares the cell of the first filter with the cell of the
second and gives ``above`` / ``below`` / ``equal to``; the third gives their difference
(format default ``+.4f``).  A placeholder that matches no row, or
more than one, is a problem: it is shown as ``[?...]`` and reported.

    {{ claims chapelle2010 }}

gives the paper's claims ledger (``<paper>/<paper>_claims.csv``, written by the report from
the records): its verdict counts, every claim that does not hold with its measured numbers
and its test, every claim whose effect does not hold on the stand-in data it was measured
on (the ledger's ``not_held_on_stand_in``) with its numbers, then the other stand-in, the
pending and the not-testable claims by id with why.

    {{ claim welleck2016 W23 | claim W23 gives the verdict per k ({verdict}). }}

gives a sentence that holds only once one claim has a computed verdict: the text after ``|``
(``{verdict}`` replaced by the verdict) when the claim's verdict is reproduced, not
reproduced or stand-in; otherwise a sentence saying the claim is pending or not testable
here, with its why.  A claim not in the ledger, or whose rule failed, is a problem.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

_PLACEHOLDER = re.compile(r"\{\{(.+?)\}\}", re.S)
_CLAIMS = re.compile(r"^\s*claims\s+([\w-]+)\s*$")
_CLAIM = re.compile(r"^\s*claim\s+([\w-]+)\s+([\w.-]+)\s*\|(.*)$", re.S)
COMPUTED = ("reproduced", "not reproduced", "stand-in")


def _ledger_rows(results: Path, paper: str) -> tuple[Path, list[dict[str, str]]]:
    from rankbench.report.ledger import LEDGER_COLUMNS, LEDGER_CSV_EXTRA

    path = results / paper / f"{paper}_claims.csv"
    if not path.is_file():
        raise ValueError(f"no ledger {path} (the report writes it)")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        missing = [c for c in (*LEDGER_COLUMNS, *LEDGER_CSV_EXTRA) if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}:1: no column(s) {missing} (an older report wrote it: rerun the report)")
    return path, rows


def claims_section(results: Path, paper: str) -> str:
    """The DISCUSSION paragraph of one paper's ledger CSV: counts, every claim that does not hold
    stated with its numbers and test, every claim whose effect does not hold on its stand-in
    data stated with its numbers, then the other verdicts by id with why."""
    from rankbench.report.ledger import VERDICTS

    path, rows = _ledger_rows(results, paper)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    out = [f"**Claims ledger** ([{paper}_claims.md]({paper}/{paper}_claims.md)): {len(rows)} claims, "
           + ", ".join(f"{n} {v}" for v, n in counts.items()) + "."]
    failed = [r for r in rows if r["verdict"] == "not reproduced"]
    if failed:
        out.append("")
        out.append("Not reproduced here:")
        for r in failed:
            test = f" Test: {r['test']}." if r["test"] else ""
            why = f" {r['why']}." if r["why"] else ""
            out.append(f"- **{r['id']}** ({r['section']}) {r['claim']}. Measured: "
                       f"{r['measured']}.{test}{why}")
    not_held = [r for r in rows if r["not_held_on_stand_in"]]
    if not_held:
        out.append("")
        out.append("Does not hold on the stand-in data (measured on data standing in for an absent "
                   "set: this says nothing of the paper's data, but the effect failed on ours):")
        for r in not_held:
            if r["verdict"] == "stand-in":
                test = f" Test: {r['test']}." if r["test"] else ""
                out.append(f"- **{r['id']}** ({r['section']}) {r['claim']}. Measured: "
                           f"{r['not_held_on_stand_in']}.{test} Stand-in: {r['why']}.")
            else:  # a claim over several data sets: only its stand-in part is stated here
                out.append(f"- **{r['id']}** ({r['section']}) {r['claim']}, its stand-in part "
                           f"(verdict of the whole claim: {r['verdict']}). Measured: "
                           f"{r['not_held_on_stand_in']}.")
    listed = {r["id"] for r in not_held}
    for verdict, head in (("stand-in", "On a stand-in for absent data (holding there, or only "
                                       "reported)"),
                          ("pending", "Pending (runs not stored yet)"),
                          ("not testable here", "Not testable here")):
        by_why: dict[str, list[str]] = {}
        for r in rows:
            if r["verdict"] == verdict and r["id"] not in listed:
                by_why.setdefault(r["why"].split(";")[0].strip() or r["measured"], []).append(r["id"])
        if by_why:
            out.append("")
            out.append(f"{head}: " + "; ".join(f"{', '.join(ids)} ({why})" for why, ids in by_why.items())
                       + ".")
    bad = [r for r in rows if r["verdict"] not in VERDICTS]
    if bad:
        raise ValueError(f"{path}: claims without a verdict: {[r['id'] for r in bad]}")
    return "\n".join(out)


def claim_sentence(results: Path, paper: str, claim_id: str, text: str) -> str:
    """``text`` when claim ``claim_id`` of the paper's ledger has a computed verdict (``{verdict}``
    in it replaced by that verdict); else a sentence saying the claim is pending or not
    testable here, and why."""
    path, rows = _ledger_rows(results, paper)
    hit = [r for r in rows if r["id"] == claim_id]
    if not hit:
        raise ValueError(f"{path}: no claim {claim_id!r}")
    (row,) = hit
    if row["verdict"] in COMPUTED:
        return " ".join(text.split()).replace("{verdict}", row["verdict"])
    if row["verdict"] not in ("pending", "not testable here"):
        raise ValueError(f"{path}: claim {claim_id} has no verdict ({row['verdict']}: {row['why']})")
    why = f": {row['why']}" if row["why"] else ""
    return f"Claim {claim_id} has no verdict yet: it is {row['verdict']}{why}."


def _filters(text: str) -> dict[str, str]:
    out = {}
    # a comma starts a new filter only where "column=" follows (values may hold commas)
    for part in filter(None, (p.strip() for p in re.split(r",(?=\s*[\w@.# -]+=)", text))):
        k, sep, v = part.partition("=")
        if not sep:
            raise ValueError(f"filter {part!r} is not column=value")
        out[k.strip()] = v.strip()
    return out


def _cell(rows: list[dict[str, str]], filters: dict[str, str], column: str) -> float | str:
    hits = [r for r in rows if all(r.get(k) == v for k, v in filters.items())]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} rows match {filters} (need exactly one)")
    if column not in hits[0]:
        raise ValueError(f"no column {column!r}")
    v = hits[0][column]
    try:
        return float(v)
    except ValueError:
        return v


def fill(template: str, results: Path) -> tuple[str, list[str]]:
    """The template with every placeholder replaced from ``results/<csv>``; (text, problems)."""
    problems: list[str] = []
    cache: dict[str, list[dict[str, str]]] = {}

    def one(m: re.Match) -> str:
        parts = [p.strip() for p in m.group(1).split("|")]
        try:
            claims = _CLAIMS.match(m.group(1))
            if claims:
                return claims_section(results, claims.group(1))
            claim = _CLAIM.match(m.group(1))
            if claim:
                return claim_sentence(results, *claim.groups())
            if len(parts) not in (3, 4, 5):
                raise ValueError("expected FILE | filters | column [| format, vs filters or "
                                 "minus filters [| format]]")
            name, filt, column = parts[:3]
            if name not in cache:
                path = results / name
                if not path.is_file():
                    raise ValueError(f"no file {path}")
                with path.open(newline="") as fh:
                    cache[name] = list(csv.DictReader(fh))
            a = _cell(cache[name], _filters(filt), column)
            last = parts[3] if len(parts) >= 4 else ".4g"
            if last.startswith("minus "):
                b = _cell(cache[name], _filters(last[6:]), column)
                if not isinstance(a, float) or not isinstance(b, float):
                    raise ValueError(f"cannot subtract {b!r} from {a!r}")
                return format(a - b, parts[4] if len(parts) == 5 else "+.4f")
            if len(parts) == 5:
                raise ValueError("a fifth part (format) only follows 'minus filters'")
            if last.startswith("vs "):
                b = _cell(cache[name], _filters(last[3:]), column)
                if not isinstance(a, float) or not isinstance(b, float):
                    raise ValueError(f"cannot compare {a!r} with {b!r}")
                return "above" if a > b else "below" if a < b else "equal to"
            return format(a, last) if isinstance(a, float) else str(a)
        except ValueError as exc:
            problems.append(f"{m.group(0).strip()}: {exc}")
            return f"[?{m.group(1).strip()}]"

    return _PLACEHOLDER.sub(one, template), problems


def write_discussion(template: Path, results: Path) -> tuple[Path | None, list[str]]:
    """Fill ``template`` into ``results/DISCUSSION.md``; (path or None without a template, problems)."""
    if not template.is_file():
        return None, []
    text, problems = fill(template.read_text(), results)
    head = ("<!-- Generated by the report from experiments/discussion.md: every number below is "
            "read from the CSV files beside it. Edit the template, not this file. -->\n")
    path = results / "DISCUSSION.md"
    path.write_text(head + text)
    return path, problems
