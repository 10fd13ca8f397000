"""What stored test scores give after training: TREC runs per system, metrics in another convention.

Every record keeps its test split's scores (float32, ``store.decode_scores``; not for splits of
more than ``record.MAX_STORED_SCORES`` documents), so the test ranking of any stored run can be
written as a TREC run (``export_trec``) and any metric recomputed in another convention
(``recompute_convention``) without retraining.

A record is data, never code: a test split is loaded through the ``RunSpec`` of the record's
spec (``rankbench.runner.load_split``: a registered data set by name; a spec naming an import
path or an unknown data set is refused), and every file name is built from the validated spec,
kept to ``[A-Za-z0-9._-]`` (a name longer than ``MAX_NAME`` is cut and suffixed with a hash of
the whole) and checked to stay inside the destination folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.spec import DEFAULT_CONVENTION, RunSpec
from rankbench.store import canonical, decode_scores, flatten_record

# file names: the portable alphabet, and far below every file system's 255 bytes
MAX_NAME = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
INDEX_FILE = "index.json"


def safe_name(text: str, max_len: int = MAX_NAME) -> str:
    """``text`` as a file name: runs of other characters than ``[A-Za-z0-9._-]`` become ``_``,
    no leading ``.``, ``-`` or ``_``; longer than ``max_len``: cut, then ``-`` and 12 hex digits
    of the sha1 of ``text`` (two texts never share a name by being cut)."""
    name = _UNSAFE.sub("_", text).lstrip("._-") or "unnamed"
    if len(name) > max_len:
        name = name[: max_len - 13] + "-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
    return name


def inside(folder: Path, name: str) -> Path:
    """``folder / name``; ValueError unless it resolves to a file directly inside ``folder``."""
    path = folder / name
    if "/" in name or "\\" in name or name in (".", "..") or \
            path.resolve().parent != folder.resolve():
        raise ValueError(f"file name {name!r} would leave {folder}")
    return path


def _data_key(spec: RunSpec) -> str:
    """What besides (dataset, variant, fold) decides a split: the data parameters, as JSON."""
    return json.dumps(canonical(spec.data_params), sort_keys=True)


class TestSplits:
    """Test splits of stored runs, each loaded once through the record's RunSpec; a data set that
    is not found is reported once (where it was looked for, and the option to pass), not per run."""

    def __init__(self, data_root: str | None, root_option: str = "--data-root DIR"):
        self.data_root = data_root
        self.root_option = root_option
        self._cache: dict[tuple, Any] = {}
        # (dataset, variant, why it is not there) -> [number of runs that needed it]
        self.missing: dict[tuple[str, str | None, str], list[int]] = {}

    def spec_of(self, record: dict[str, Any]) -> RunSpec:
        """The validated RunSpec of ``record``'s spec (ValueError: code named, unknown data set,
        or identity fields of the record that are not its spec's)."""
        raw = record.get("spec")
        if not isinstance(raw, dict):
            raise ValueError("the record holds no spec")
        spec = RunSpec.from_dict({**raw, "data_root": self.data_root} if self.data_root else raw)
        for key in ("experiment", "dataset", "variant", "fold", "solver"):
            if record.get(key) != getattr(spec, key):
                raise ValueError(f"its {key} {record.get(key)!r} is not its spec's "
                                 f"{getattr(spec, key)!r}")
        return spec

    def get(self, spec: RunSpec):
        """The test split of ``spec`` (RankingData), or None when its data set is not found or
        its loader fails (counted per data set and reason in ``missing``)."""
        from rankbench.data.catalog import DatasetNotFound
        from rankbench.runner import load_split

        key = (spec.dataset, spec.variant, spec.fold, spec.seed, _data_key(spec))
        if key not in self._cache:
            try:
                self._cache[key] = load_split(spec, "test")
            except DatasetNotFound:
                self._cache[key] = self._where(spec)
            except Exception as exc:  # noqa: BLE001 - a registered loader's failure, said once
                self._cache[key] = f"its test split could not be loaded: {type(exc).__name__}: {exc}"
        data = self._cache[key]
        if isinstance(data, str):
            entry = self.missing.setdefault((spec.dataset, spec.variant, data), [0])
            entry[0] += 1
            return None
        return data

    def _where(self, spec: RunSpec) -> str:
        from rankbench.data.catalog import dataset_spec
        from rankbench.data.registry import data_root

        root = data_root(spec.data_root)
        try:
            ds = dataset_spec(spec.dataset)
            layout = ds.layout(spec.variant or ds.default_variant)
        except (ValueError, KeyError):
            layout = spec.dataset
        if root is None:
            return (f"no data root is set, so its files were looked for nowhere: pass "
                    f"{self.root_option} (the folder holding {layout}) or set RANKBENCH_DATA")
        return (f"looked for {root}/{layout}, not found: pass {self.root_option} naming the "
                f"folder that holds {layout}")

    def missing_lines(self, runs: str = "run(s)") -> list[str]:
        """One line per data set (and reason) whose test split could not be had."""
        return [f"{ds}{f' (variant {var})' if var else ''}: {n} {runs} need its test split; {why}"
                for (ds, var, why), (n,) in sorted(self.missing.items(), key=str)]


# ---------------------------------------------------------------- TREC runs, one per system
@dataclass
class System:
    """One system: the per-fold selected runs of (experiment, dataset, variant, data, solver)."""

    experiment: str
    dataset: str
    variant: str | None
    data_key: str
    solver: str
    folds: list[dict[str, Any]] = field(default_factory=list)  # fold, record, spec, selection

    @property
    def label(self) -> str:
        var = f" ({self.variant})" if self.variant else ""
        return f"{self.experiment} {self.dataset}{var} {self.solver}"


def _systems(pairs: list[tuple[dict, RunSpec]], metric: str,
             problems: list[str]) -> list[System]:
    """Per system and fold the run of the model ``select_per_fold`` chooses on ``metric`` (or the
    fold's only parameter set when no run has ``metric``); of several seeds, the smallest."""
    import pandas as pd

    from rankbench.selection import select_per_fold

    groups: dict[tuple, list[tuple[dict, RunSpec]]] = {}
    for rec, spec in pairs:
        key = (spec.experiment, spec.dataset, spec.variant, _data_key(spec), spec.solver)
        groups.setdefault(key, []).append((rec, spec))
    systems = []
    for key in sorted(groups, key=str):
        members = groups[key]
        system = System(*key)
        by_id = {rec["run_id"]: (rec, spec) for rec, spec in members}
        frame = pd.DataFrame([flatten_record(rec) for rec, _ in members])
        if metric in frame.columns and frame[metric].notna().any():
            sel = select_per_fold(frame, metric).to_dict("records")
            missing = sorted(set(frame["fold"]) - {row["fold"] for row in sel})
            if missing:
                problems.append(f"{system.label}: fold(s) {missing} have no run with {metric}: "
                                "their rankings are left out of the run file")
        else:
            sel = []
            for fold, runs in frame.groupby("fold"):
                if runs["params"].nunique() > 1:
                    problems.append(
                        f"{system.label}: fold {fold} holds {runs['params'].nunique()} parameter "
                        f"sets and no run has {metric} to choose one: pass --select METRIC, or "
                        "filter with -p K=V")
                    sel = None
                    break
                sel.append({"fold": fold, "params": runs["params"].iloc[0], "run_ids":
                            list(runs["run_id"]), "selected_value": None, "n_candidates": 1})
            if sel is None:
                continue
        for row in sorted(sel, key=lambda r: r["fold"]):
            rec, spec = min((by_id[r] for r in row["run_ids"]), key=lambda rs: rs[1].seed)
            system.folds.append({
                "fold": int(row["fold"]), "record": rec, "spec": spec,
                "selection": {"fold": int(row["fold"]), "run_id": rec["run_id"],
                              "params": json.loads(row["params"]), "seed": spec.seed,
                              "n_seeds": len(row["run_ids"]),
                              "selected_value": _number(row.get("selected_value")),
                              "n_candidates": int(row["n_candidates"])}})
        if system.folds:
            systems.append(system)
    return systems


def _number(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


def _name(stem: str, suffix: str, taken: set[str]) -> str:
    name = safe_name(stem, MAX_NAME - len(suffix)) + suffix
    if name in taken:  # two stems that differ only in characters made safe
        name = safe_name(f"{stem}-{hashlib.sha1(stem.encode()).hexdigest()[:12]}",
                         MAX_NAME - len(suffix)) + suffix
    taken.add(name)
    return name


def export_trec(records: list[dict[str, Any]], out: str | Path, data_root: str | None,
                metric: str = "vali.ndcg@10", say=print, warn=print) -> int:
    """``rankbench results --export-trec DIR``: one TREC run file per system, qrels per data set,
    and ``index.json``; 0 when every ok record's system was exported, else 1.

    A system is (experiment, dataset, variant, data parameters, solver); its run file holds, for
    each fold, the test ranking of the model ``select_per_fold`` chooses on ``metric`` (or the
    fold's only parameter set), folds in order, each test query once (two folds whose test sets
    share a query are refused).  The qrels of a data set hold every exported fold's test labels.
    ``index.json`` maps each file to what it holds: experiment, dataset, variant, solver, the
    selection metric and per fold the run id, parameters, seed and selected value.
    """
    from rankbench.trec import qrels_lines, run_lines, write_lines

    out = Path(out)
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        warn("rankbench results: no ok runs to export")
        return 0
    splits = TestSplits(data_root)
    problems: list[str] = []
    pairs = []
    for r in ok:
        try:
            pairs.append((r, splits.spec_of(r)))
        except ValueError as exc:
            problems.append(f"record {r.get('run_id')}: {exc}")
    systems = _systems(pairs, metric, problems)
    taken: set[str] = set()
    qrels: dict[tuple, dict[str, Any]] = {}   # data identity -> {"name", "folds": {fold: data}}
    files: list[tuple[str, list[str]]] = []
    index: list[dict[str, Any]] = []
    for system in systems:
        lines: list[str] = []
        seen_qids: dict[int, int] = {}
        data_id = (system.dataset, system.variant, system.data_key)
        q = qrels.setdefault(data_id, {"folds": {}})
        tag = safe_name(f"{system.solver}_{system.experiment}")
        split_of = [splits.get(entry["spec"]) for entry in system.folds]
        if any(d is None for d in split_of):
            continue  # its data set is not found: said once per data set below
        scored: dict[int, Any] = {}  # the system's test splits by fold, kept once it is whole
        try:
            for entry, data in zip(system.folds, split_of, strict=True):
                scores = decode_scores((entry["record"].get("scores") or {}).get("test"))
                if scores.shape[0] != data.n_docs:
                    raise ValueError(f"fold {entry['fold']}: {scores.shape[0]} stored scores for "
                                     f"a test split of {data.n_docs} documents (data changed?)")
                shared = [int(x) for x in np.unique(data.qid) if int(x) in seen_qids]
                if shared:
                    raise ValueError(
                        f"folds {seen_qids[shared[0]]} and {entry['fold']} share test query "
                        f"{shared[0]} ({len(shared)} shared): one run cannot hold both rankings; "
                        f"export one fold at a time with --fold K")
                seen_qids.update({int(x): entry["fold"] for x in np.unique(data.qid)})
                kept = q["folds"].get(entry["fold"])
                if kept is not None and not _same_split(kept, data):
                    raise ValueError(f"fold {entry['fold']}: its test split differs from the one "
                                     "another system of this data set was scored on (seed?)")
                scored[entry["fold"]] = data
                lines += run_lines(data, scores, tag)
        except ValueError as exc:
            problems.append(f"{system.label}: {exc}")
            continue
        q["folds"].update(scored)
        if "name" not in q:
            var = f"_{system.variant}" if system.variant else ""
            q["name"] = _name(f"{system.dataset}{var}{_params_part(system.data_key)}", ".qrels", taken)
        var = f"_{system.variant}" if system.variant else ""
        name = _name(f"{system.experiment}__{system.dataset}{var}"
                     f"{_params_part(system.data_key)}__{system.solver}", ".run", taken)
        files.append((name, lines))
        index.append({"file": name, "qrels": q["name"], "experiment": system.experiment,
                      "dataset": system.dataset, "variant": system.variant,
                      "data_params": json.loads(system.data_key), "solver": system.solver,
                      "tag": tag, "selected_by": metric,
                      "n_queries": len(seen_qids), "folds": [e["selection"] for e in system.folds]})
    n_qrels = 0
    for q in qrels.values():
        if "name" in q:
            folds = q["folds"]
            files.append((q["name"], [ln for k in sorted(folds) for ln in qrels_lines(folds[k])]))
            n_qrels += 1
    try:
        if files:
            out.mkdir(parents=True, exist_ok=True)
        for name, lines in files:
            write_lines(inside(out, name), lines)
        if files:
            write_lines(inside(out, INDEX_FILE), [json.dumps(
                {"selected_by": metric, "systems": index}, indent=1, sort_keys=True) + "\n"])
    except OSError as exc:
        warn(f"rankbench results: cannot write the export into {out}: {exc}")
        return 1
    for line in splits.missing_lines("selected run(s)"):
        warn(f"rankbench results: not exported: {line}")
    for p in problems:
        warn(f"rankbench results: not exported: {p}")
    say(f"wrote {len(index)} TREC run file(s) (one per system: the test rankings of the models "
        f"selected per fold on {metric}, folds concatenated), {n_qrels} qrels file(s)"
        + (f" and {INDEX_FILE}" if index else "") + f" to {out}")
    return 1 if problems or splits.missing else 0


def _params_part(data_key: str) -> str:
    """A short, stable mark of non-default data parameters for a file name ('' without any)."""
    return "" if data_key == "{}" else "_data-" + hashlib.sha1(data_key.encode()).hexdigest()[:8]


def _same_split(a, b) -> bool:
    return (a.n_docs == b.n_docs and np.array_equal(a.qid, b.qid) and np.array_equal(a.y, b.y)
            and np.array_equal(np.asarray(a.doc_ids()), np.asarray(b.doc_ids())))


# ---------------------------------------------------------------- another metric convention
def record_convention(record: dict[str, Any]) -> str:
    """The metric convention of a record's metrics (records that name none: LETOR's)."""
    return record.get("convention") or (record.get("spec") or {}).get("convention") \
        or DEFAULT_CONVENTION


def recompute_convention(records: list[dict[str, Any]], convention: str, data_root: str | None,
                         warn=print) -> list[dict[str, Any]]:
    """``records`` with their test metrics and per-query test values recomputed in
    ``convention`` from the stored test scores (the test split loaded for its labels); records
    already in ``convention`` and runs that are not ok are kept as they are.  An ok record whose
    scores are not stored or whose data set is not found is left out, said once with a count.
    The copies say ``convention``; their validation metrics (what selection reads) stay as
    recorded.  Values come from the stored float32 scores, so where float32 ties documents that
    float64 ordered, they may differ from a run trained in ``convention``."""
    from rankbench.metrics.measures import check_convention
    from rankbench.record import evaluate_split, per_query_test

    convention = check_convention(convention)
    splits = TestSplits(data_root)
    out: list[dict[str, Any]] = []
    no_scores, bad = 0, []
    for r in records:
        if r.get("status") != "ok" or record_convention(r) == convention:
            out.append(r)
            continue
        try:
            scores = decode_scores((r.get("scores") or {}).get("test"))
        except ValueError:
            no_scores += 1
            continue
        try:
            data = splits.get(splits.spec_of(r))
            if data is not None and scores.shape[0] != data.n_docs:
                raise ValueError(f"{scores.shape[0]} stored scores for {data.n_docs} documents")
        except ValueError as exc:
            bad.append(f"{r['run_id']}: {exc}")
            continue
        if data is None:
            continue
        new = copy.copy(r)
        new["metrics"] = {**(r.get("metrics") or {}), "test": evaluate_split(data, scores, convention)}
        new["per_query"] = {**(r.get("per_query") or {}), "test": per_query_test(data, scores, convention)}
        new["convention"] = convention
        new["recorded_convention"] = record_convention(r)
        out.append(new)
    if no_scores:
        warn(f"rankbench results: {no_scores} run(s) left out: their test scores are not stored "
             f"(splits of more than the record's limit), so {convention} metrics cannot be "
             "recomputed")
    for line in splits.missing_lines():
        warn(f"rankbench results: left out (no test labels for the {convention} convention): {line}")
    for b in bad:
        warn(f"rankbench results: left out: record {b}")
    return out
