"""Transcribe the published LETOR baselines into CSV files (run once, by hand).

ranksvm_letor.csv: the RankSVM rows, every split. letor3_baselines.csv: every LETOR 3.0
algorithm's test NDCG@1/3/5/10 and MAP per fold and averaged (Chapelle & Keerthi's Fig. 2
draws them for OHSUMED).

Sources (files of the LETOR distribution, see RANKBENCH_DATA/README.md):
- LETOR 3.0: baselines/LETOR3.0/RankSVM.xls (one sheet per dataset; SVMlight RankSVM with
  the "-# 5000" iteration limit, cf. Chapelle & Keerthi 2010, Sect. 5.1) and
  baselines/LETOR3.0/<DATASET>.xls (one sheet per algorithm), read with pandas.read_excel
  (needs xlrd).
- LETOR 4.0: baselines/LETOR4.0/RankSVM-Struct.{MQ2007,MQ2008}.txt (tab-separated blocks;
  one row per fold in Fold1..Fold5 order, first column = the chosen C).

Usage: python experiments/letor_baselines/extract_letor_baselines.py $RANKBENCH_DATA/baselines
The CSV it writes is committed, so `make reproduce` does not need xlrd or the baseline files.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pandas as pd

OUT = Path(__file__).with_name("ranksvm_letor.csv")
OUT_ALL = Path(__file__).with_name("letor3_baselines.csv")
LETOR3_DATASETS = ("OHSUMED", "TD2003", "TD2004", "NP2003", "NP2004", "HP2003", "HP2004")
ALL_METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map")
SPLITS = {"testing": "test", "validation": "vali", "training": "train"}


def _metric_name(h: str) -> str:
    h = h.strip()
    if h.startswith("NDCG@"):
        return "ndcg@" + h[5:]
    if h.startswith("P@"):
        return "p@" + h[2:]
    return {"MAP": "map", "MeanNDCG": "mean_ndcg"}[h]


def letor3(path: Path, by: str = "dataset") -> list[dict]:
    """Rows from a LETOR 3.0 workbook (all sheets, all three splits): RankSVM.xls has a sheet
    per dataset (``by="dataset"``), <DATASET>.xls a sheet per algorithm (``by="algorithm"``)."""
    rows = []
    for sheet, df in pd.read_excel(path, sheet_name=None, header=None).items():
        dataset = sheet.upper() if by == "dataset" else path.stem.upper()
        algorithm = "RankSVM" if by == "dataset" else sheet.strip()
        split = None
        header: list[str] = []
        for rec in df.itertuples(index=False):
            first = str(rec[0]).strip()
            if first.startswith("Performance on"):
                split = SPLITS[first.split()[2]]
            elif first == "Folds":
                header = [str(v).strip() for v in rec[1:] if str(v).strip() not in ("nan", "")]
            elif first.startswith("Fold") or first == "average":
                fold = "avg" if first == "average" else first[4:]
                for h, v in zip(header, rec[1:], strict=False):
                    rows.append({"collection": "LETOR3.0", "dataset": dataset,
                                 "algorithm": algorithm, "split": split, "fold": fold,
                                 "metric": _metric_name(h), "value": float(v),
                                 "source": f"baselines/LETOR3.0/{path.name}, sheet {sheet}"})
    return rows


def letor4(path: Path, dataset: str) -> list[dict]:
    """Rows from a LETOR 4.0 per-algorithm text table (test and validation blocks)."""
    rows = []
    split = None
    header: list[str] = []
    fold = 0
    for line in path.read_text().splitlines():
        cells = [c for c in line.strip().split("\t") if c != ""]
        if not cells:
            continue
        if cells[0].startswith("Performance on"):
            split = SPLITS[cells[0].split()[2]]
        elif cells[0] == "Para":
            header, fold = cells[1:], 0
        elif header and split:
            fold += 1
            name = "avg" if cells[0] == "Avg" else str(fold)
            for h, v in zip(header, cells[1:], strict=False):
                rows.append({"collection": "LETOR4.0", "dataset": dataset,
                             "algorithm": "RankSVM-Struct", "split": split, "fold": name,
                             "metric": _metric_name(h), "value": float(v),
                             "source": f"baselines/LETOR4.0/{path.name}"})
            if cells[0] != "Avg":
                rows.append({"collection": "LETOR4.0", "dataset": dataset,
                             "algorithm": "RankSVM-Struct", "split": split, "fold": name,
                             "metric": "C", "value": float(cells[0]),
                             "source": f"baselines/LETOR4.0/{path.name}"})
    return rows


def main(root: str) -> None:
    base = Path(root)
    rows = letor3(base / "LETOR3.0" / "RankSVM.xls")
    for ds in ("MQ2007", "MQ2008"):
        rows += letor4(base / "LETOR4.0" / f"RankSVM-Struct.{ds}.txt", ds)
    # the C row is written once per (fold, metric block); keep one
    seen, uniq = set(), []
    for r in rows:
        key = (r["dataset"], r["split"], r["fold"], r["metric"])
        if key not in seen:
            seen.add(key)
            uniq.append(r)
    with OUT.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(uniq[0]))
        w.writeheader()
        w.writerows(uniq)
    print(f"wrote {len(uniq)} rows to {OUT}")
    every = []
    for ds in LETOR3_DATASETS:
        path = base / "LETOR3.0" / f"{ds}.xls"
        if path.is_file():
            every += [r for r in letor3(path, by="algorithm")
                      if r["split"] == "test" and r["metric"] in ALL_METRICS]
    with OUT_ALL.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(every[0]))
        w.writeheader()
        w.writerows(every)
    print(f"wrote {len(every)} rows to {OUT_ALL}")


if __name__ == "__main__":
    main(sys.argv[1])
