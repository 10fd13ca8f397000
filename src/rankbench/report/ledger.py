"""The claims ledger: every claim of a paper, with a verdict computed from the stored records.

``experiments/<paper>/claims.csv`` lists a paper's claims as data, one per row:

    id           unique within the paper (C1, C2 ...)
    section      where the paper makes it (Abstract, Sect. 5.1, Table 3, Fig. 2 caption ...)
    claim        the claim, in a sentence
    quote        the paper's own words (a literal excerpt of its text; may be empty for a
                 table cell, whose number is a row of paper_values.csv)
    kind         numeric | qualitative
    experiments  the experiment configs whose runs test it (space-separated), or empty
    rule         a registered claim rule (``rankbench.report.claim_rules.CLAIM_RULES``)
    args         the rule's arguments, a YAML flow mapping
    note         anything a reader needs beside the verdict

There is no verdict column: a rule computes it from the records (and, for published-only
claims, from the transcribed published tables), one of ``VERDICTS``.  The report writes
each paper's ledger as ``<paper>/<paper>_claims.{md,csv}`` and opens the paper's section
of results/README.md with its verdict counts; DISCUSSION.md states every claim that does
not hold, with its numbers, from the ledger CSV.
"""

from __future__ import annotations

import csv
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.plan import ExperimentPlan
from rankbench.report.claims_file import CLAIM_COLUMNS, KINDS, load_claims  # noqa: F401 (re-exported)
from rankbench.report.paper import Paper

# every verdict a rule may return, in the order the counts are printed
VERDICTS = ("reproduced", "not reproduced", "stand-in", "not testable here", "pending")
FAILED = "rule failed"
LEDGER_COLUMNS = ["id", "section", "claim", "verdict", "measured", "test", "why", "records",
                  "rule"]
# the CSV's columns beyond the table's: the cited runs, whether the measured effect held
# (yes / no / empty when nothing was compared), and the measured text of every stand-in part
# where it did not (DISCUSSION states those with their numbers)
LEDGER_CSV_EXTRA = ["run_ids", "held", "not_held_on_stand_in"]


@dataclass
class Verdict:
    """What a claim rule returns: the verdict, the measured effect with its numbers, the paired
    test behind it, why a claim is a stand-in / not testable / pending, and the records used.

    ``held``: whether the measured effect is the claimed one, on whatever data it was measured
    (None when nothing was compared).  ``not_held_on_stand_in``: the measured text of each
    part of the claim measured on a stand-in where the effect did not hold (a stand-in
    verdict says nothing about the paper, but the effect failing there is still stated)."""

    status: str
    measured: str = ""
    test: str = ""
    why: str = ""
    runs: list[str] = field(default_factory=list)  # run ids the verdict is computed from
    tags: list[str] = field(default_factory=list)  # the store tags of those runs
    held: bool | None = None
    not_held_on_stand_in: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.status not in VERDICTS and self.status != FAILED:
            raise ValueError(f"verdict {self.status!r} is not one of {VERDICTS}")


@dataclass
class ClaimResult:
    """One ledger row: the claim (its claims.csv row) and its computed verdict."""

    claim: dict[str, Any]
    verdict: Verdict

    def row(self) -> dict[str, Any]:
        """The ledger's table row."""
        v = self.verdict
        n = len(v.runs)
        records = (f"{n} run{'s' * (n != 1)} ({', '.join(sorted(set(v.tags)))})" if n else
                   "published values only" if self.claim["rule"].startswith("published") else "")
        return {"id": self.claim["id"], "section": self.claim["section"],
                "claim": self.claim["claim"], "verdict": v.status, "measured": v.measured,
                "test": v.test, "why": v.why, "records": records, "rule": self.claim["rule"],
                "run_ids": " ".join(v.runs),
                "held": {True: "yes", False: "no", None: ""}[v.held],
                "not_held_on_stand_in": "; ".join(v.not_held_on_stand_in)}


@dataclass
class ClaimContext:
    """What a claim rule may read: the paper (its published numbers), the claim, and the plans
    of every experiment config in the report with their stored records attached."""

    paper: Paper
    claim: dict[str, Any]
    plans: dict[str, ExperimentPlan]
    quick: bool = False

    @property
    def experiments_dir(self) -> Path:
        """The folder holding every paper folder (and letor_baselines/)."""
        return self.paper.folder.parent

    def plan(self, name: str) -> ExperimentPlan | None:
        """The plan of experiment config ``name`` (its quick/ variant in quick mode), or None
        when the report did not plan it."""
        if self.quick and f"quick/{name}" in self.plans:
            return self.plans[f"quick/{name}"]
        return self.plans.get(name)

    def paper_value(self, artefact: str, **match: Any) -> dict[str, Any]:
        """The one published number of ``artefact`` matching ``match`` (paper_values.csv);
        ValueError when none or several match (a claim must name exactly one)."""
        hits = self.paper.paper_values(artefact, **dict(match))
        if len(hits) != 1:
            raise ValueError(f"claim {self.claim['id']}: {len(hits)} published values of "
                             f"{artefact} match {match} (need exactly one)")
        return hits[0]


def evaluate(paper: Paper, plans: dict[str, ExperimentPlan], quick: bool = False) -> list[ClaimResult]:
    """Every claim of ``paper`` with the verdict its rule computes; a rule that raises gives a
    'rule failed' row (with the error) rather than hiding the others."""
    from rankbench.report.claim_rules import CLAIM_RULES

    out = []
    for claim in paper.claims:
        cx = ClaimContext(paper, claim, plans, quick)
        try:
            rule = CLAIM_RULES.get(claim["rule"])
            verdict = rule(cx, **claim["args"])
            if not isinstance(verdict, Verdict):
                raise TypeError(f"rule {claim['rule']} returned {type(verdict).__name__}, not a Verdict")
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the ledger
            verdict = Verdict(FAILED, why=f"{claim['where']}: {type(exc).__name__}: {exc}",
                              test=traceback.format_exc(limit=3).splitlines()[-1])
        out.append(ClaimResult(claim, verdict))
    return out


def counts(results: list[ClaimResult]) -> dict[str, int]:
    """Verdict -> number of claims, every verdict listed (failed rules last, when any)."""
    c = {v: 0 for v in VERDICTS}
    for r in results:
        c[r.verdict.status] = c.get(r.verdict.status, 0) + 1
    return {k: n for k, n in c.items() if k in VERDICTS or n}


def counts_line(results: list[ClaimResult]) -> str:
    """'12 claims: 5 reproduced, 3 not reproduced, ...'."""
    c = counts(results)
    return f"{len(results)} claims: " + ", ".join(f"{n} {k}" for k, n in c.items())


def write_ledger(paper: Paper, results: list[ClaimResult], out_dir: str | Path,
                 quick: bool = False) -> list[Path]:
    """``<out_dir>/<paper>/<paper>_claims.md`` and ``.csv``; returns their paths."""
    from rankbench.report.output import markdown_table

    folder = Path(out_dir) / paper.key
    folder.mkdir(parents=True, exist_ok=True)
    md, csv_path = folder / f"{paper.key}_claims.md", folder / f"{paper.key}_claims.csv"
    rows = [r.row() for r in results]
    head = [f"# {paper.citation}: every claim with its verdict", "",
            f"{counts_line(results)}.", ""]
    if quick:
        head += ["QUICK MODE: small synthetic stand-ins; these verdicts are a smoke test.", ""]
    head += ["Verdicts are computed from the stored records by the rule named in each row "
             f"(`experiments/{paper.key}/claims.csv`; `rankbench.report.claim_rules`): "
             "reproduced; not reproduced (with the measured effect and its paired test); "
             "stand-in (tested on a stand-in for absent data, named); not testable here (the "
             "data or program is absent); pending (its runs are not stored yet).", ""]
    md.write_text("\n".join([*head, markdown_table(rows, LEDGER_COLUMNS[:-1]), ""]))
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*LEDGER_COLUMNS, *LEDGER_CSV_EXTRA])
        w.writeheader()
        w.writerows(rows)
    return [md, csv_path]


def ledger_artefact(paper: Paper, plans: dict[str, ExperimentPlan], out_dir: str | Path,
                    quick: bool = False):
    """Evaluate ``paper``'s claims, write its ledger, and return it as the index's entry
    (kind "claims"; status failed when a rule raised)."""
    from rankbench.report.context import Artefact

    results = evaluate(paper, plans, quick)
    files = write_ledger(paper, results, out_dir, quick)
    broken = [r for r in results if r.verdict.status == FAILED]
    return Artefact(f"{paper.key}_claims", paper.key, "claims",
                    f"{paper.citation}: every claim with its verdict", files, counts_line(results),
                    "failed" if broken else "ok", [r.verdict.why for r in broken], [], results)
