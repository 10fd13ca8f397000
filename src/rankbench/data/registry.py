"""Dataset registry: where each benchmark lives under the data root and how to load one fold.

``load_fold(name, fold, split)`` finds the files of a LETOR 3.0 / 4.0 data set, an
RCV1 binary task or the synthetic generator, and returns a :class:`RankingData`.
The data root is the ``root`` argument or the ``RANKBENCH_DATA`` environment variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.data.letor import read_letor
from rankbench.data.ranking_data import RankingData

SPLITS = ("train", "vali", "test")
COMPRESSED_SUFFIXES = ("", ".xz", ".gz", ".bz2")
# LETOR 3.0 names the split files train/vali/test.txt in QueryLevelNorm and
# trainingset/validationset/testset.txt in Feature-min / Feature-null.
SPLIT_FILES = {
    "train": ("train.txt", "trainingset.txt"),
    "vali": ("vali.txt", "validationset.txt"),
    "test": ("test.txt", "testset.txt"),
}
LETOR3_VARIANTS = ("QueryLevelNorm", "Feature-min", "Feature-null")


class DatasetNotFound(FileNotFoundError):
    """A benchmark data set is not under the data root; the message says which files to put where."""


@dataclass(frozen=True)
class DatasetSpec:
    """What the registry knows about one benchmark: layout, shape and the papers' names for it."""

    name: str
    family: str  # letor3 | letor4 | rcv1 | synthetic
    description: str
    graded: bool
    n_folds: int
    variants: tuple[str | None, ...]
    default_variant: str | None
    n_features: int | None
    paper_names: tuple[str, ...]
    stats: dict[str, Any] = field(default_factory=dict)
    folder: str = ""  # folder name in the original distribution
    gov_dir: str = ""  # LETOR 3.0 Gov sub-folder, e.g. "2003_td_dataset"

    def info(self) -> dict[str, Any]:
        """A plain dict for reports and ``dataset_info``."""
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "labels": "graded" if self.graded else "binary",
            "graded": self.graded,
            "n_folds": self.n_folds,
            "variants": list(self.variants),
            "default_variant": self.default_variant,
            "n_features": self.n_features,
            "paper_names": list(self.paper_names),
            "stats": dict(self.stats),
        }


def _gov(name: str, year: int, kind: str, queries: int, docs: int, long: str) -> DatasetSpec:
    # Rough share of relevant documents, only to shape synthetic stand-ins: topic
    # distillation has about ten relevant pages per query, named/home page finding
    # about one in the ~1,000 documents of a query.
    rate = 0.012 if kind == "td" else 0.0012
    return DatasetSpec(
        name=name, family="letor3", graded=False, n_folds=5, variants=LETOR3_VARIANTS,
        default_variant="QueryLevelNorm", n_features=64,
        description=f"LETOR 3.0 {long} (TREC {year} web track, .gov collection), binary relevance",
        paper_names=(name.upper(), f"{name[:2].upper()} {year}", f"{year}_{kind}_dataset"),
        stats={"n_queries": queries, "n_docs": docs, "approx_relevant_rate": rate},
        folder=name.upper(),
        gov_dir=f"{year}_{kind}_dataset",
    )


_SPECS: dict[str, DatasetSpec] = {
    "ohsumed": DatasetSpec(
        name="ohsumed", family="letor3", graded=True, n_folds=5, variants=LETOR3_VARIANTS,
        default_variant="QueryLevelNorm", n_features=45,
        description="LETOR 3.0 OHSUMED (medical abstracts, 3 relevance levels)",
        paper_names=("OHSUMED",),
        stats={"n_queries": 106, "n_docs": 16140, "labels": {0: 11303, 1: 2585, 2: 2252}},
        folder="OHSUMED",
    ),
    # .gov query/document counts as LETOR 3.0 describes them (Qin et al. 2010); not
    # checked against files on this machine, where the .gov sets are absent.
    "td2003": _gov("td2003", 2003, "td", 50, 49058, "topic distillation 2003"),
    "td2004": _gov("td2004", 2004, "td", 75, 74146, "topic distillation 2004"),
    "np2003": _gov("np2003", 2003, "np", 150, 148657, "named page finding 2003"),
    "np2004": _gov("np2004", 2004, "np", 75, 73834, "named page finding 2004"),
    "hp2003": _gov("hp2003", 2003, "hp", 150, 147606, "home page finding 2003"),
    "hp2004": _gov("hp2004", 2004, "hp", 75, 74409, "home page finding 2004"),
    "mq2007": DatasetSpec(
        name="mq2007", family="letor4", graded=True, n_folds=5, variants=(None,),
        default_variant=None, n_features=46,
        description="LETOR 4.0 MQ2007 (Million Query track 2007, supervised setting, 3 levels)",
        paper_names=("MQ2007",), stats={"n_queries": 1692, "n_docs": 69623}, folder="MQ2007",
    ),
    "mq2008": DatasetSpec(
        name="mq2008", family="letor4", graded=True, n_folds=5, variants=(None,),
        default_variant=None, n_features=46,
        description="LETOR 4.0 MQ2008 (Million Query track 2008, supervised setting, 3 levels)",
        paper_names=("MQ2008",),
        stats={"n_queries": 784, "n_docs": 15211, "labels": {0: 12279, 1: 2001, 2: 931}},
        folder="MQ2008",
    ),
    "rcv1_ccat": DatasetSpec(
        name="rcv1_ccat", family="rcv1", graded=False, n_folds=1,
        variants=("papers", "lewis"), default_variant="papers", n_features=47236,
        description="RCV1-v2 topic CCAT vs rest (about 47% positive), one query (AUC), sparse tf-idf",
        paper_names=("RCV1 CCAT", "CCAT"),
        stats={"n_docs": 804414, "n_train_papers": 781265, "n_test_papers": 23149},
    ),
    "rcv1_e311": DatasetSpec(
        name="rcv1_e311", family="rcv1", graded=False, n_folds=1,
        variants=("papers", "lewis"), default_variant="papers", n_features=47236,
        description="RCV1-v2 topic E311 vs rest (about 0.2% positive), one query (AUC), sparse tf-idf",
        paper_names=("RCV1 E311", "E311"),
        stats={"n_docs": 804414, "n_train_papers": 781265, "n_test_papers": 23149},
    ),
    "synthetic": DatasetSpec(
        name="synthetic", family="synthetic", graded=True, n_folds=5,
        variants=(None, "letor_like", "rcv1_like"), default_variant=None, n_features=None,
        description="Generated data: LETOR-like queries (default) or an RCV1-like sparse binary task",
        paper_names=(),
    ),
}


def list_datasets() -> list[str]:
    """Names ``load_fold`` accepts."""
    return list(_SPECS)


def dataset_info(name: str) -> dict[str, Any]:
    """Description, binary or graded labels, number of folds, variants and the papers' names for ``name``."""
    return _spec(name).info()


def _spec(name: str) -> DatasetSpec:
    key = name.lower()
    if key not in _SPECS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(_SPECS)}")
    return _SPECS[key]


def data_root(root: str | Path | None = None) -> Path | None:
    """The data root: ``root`` if given, else ``RANKBENCH_DATA``, else None."""
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("RANKBENCH_DATA")
    return Path(env).expanduser() if env else None


def _resolve_variant(spec: DatasetSpec, variant: str | None) -> str | None:
    if variant is None:
        return spec.default_variant
    for v in spec.variants:
        if v is not None and v.lower() == str(variant).lower():
            return v
    allowed = [v for v in spec.variants if v is not None]
    raise ValueError(f"dataset {spec.name!r} has no variant {variant!r}; variants: {allowed}")


def _letor_dirs(spec: DatasetSpec, variant: str | None, root: Path) -> list[Path]:
    """Candidate folders holding ``Fold1..Fold5`` for a LETOR data set, most common layout first."""
    names = [spec.folder, spec.folder.lower(), spec.name]
    out: list[Path] = []
    bases = [root, root / "LETOR3.0", root / "LETOR4.0"]
    for base in bases:
        for n in names:
            if variant is None:
                out.append(base / n)
            else:
                out.append(base / n / variant)
                if variant == spec.default_variant:
                    out.append(base / n)
        if spec.gov_dir:
            for gov in ("Gov", "gov"):
                out.append(base / gov / variant / spec.gov_dir)
            out.append(base / variant / spec.gov_dir)
            if variant == spec.default_variant:
                out.append(base / spec.gov_dir)
    return list(dict.fromkeys(out))


def _find_split_file(folder: Path, split: str) -> Path | None:
    for fname in SPLIT_FILES[split]:
        for suffix in COMPRESSED_SUFFIXES:
            p = folder / f"{fname}{suffix}"
            if p.is_file():
                return p
    return None


def letor_split_path(name: str, fold: int, split: str, variant: str | None = None,
                     root: str | Path | None = None) -> Path:
    """The file holding ``split`` of ``fold`` of a LETOR data set; raises DatasetNotFound."""
    spec = _spec(name)
    if spec.family not in ("letor3", "letor4"):
        raise ValueError(f"{name!r} is not a LETOR data set")
    variant = _resolve_variant(spec, variant)
    _check_fold_split(spec, fold, split)
    base = data_root(root)
    if base is not None:
        for d in _letor_dirs(spec, variant, base):
            p = _find_split_file(d / f"Fold{fold}", split)
            if p is not None:
                return p
    raise DatasetNotFound(_missing_message(spec, variant, base))


def _check_fold_split(spec: DatasetSpec, fold: int, split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if isinstance(fold, bool) or int(fold) != fold or not 1 <= fold <= spec.n_folds:
        raise ValueError(f"fold must be an integer in 1..{spec.n_folds} for {spec.name!r}, got {fold!r}")


def _missing_message(spec: DatasetSpec, variant: str | None, base: Path | None) -> str:
    where = (f"under the data root {base}" if base is not None
             else "because no data root is set (pass root=... or set RANKBENCH_DATA)")
    shown = str(base) if base is not None else "$RANKBENCH_DATA"
    label = spec.name + (f" (variant {variant})" if variant else "")
    if spec.family == "rcv1":
        from sklearn.datasets import get_data_home

        return (f"dataset {label} not found: scikit-learn's RCV1-v2 cache (RCV1/samples*.pkl and "
                f"RCV1/sample_topics*.pkl, about 650 MB) is in none of {shown}/rcv1, "
                f"sklearn's data home {get_data_home()} or a data_home= you pass. While online, "
                f"run sklearn.datasets.fetch_rcv1(data_home='{shown}/rcv1') once, or call "
                f"load_fold('{spec.name}', 1, split, download=True, data_home=...); "
                f"or pass allow_synthetic=True for a labelled stand-in.")
    split_names = (" {train,vali,test}.txt" if variant in (None, "QueryLevelNorm")
                   else " {trainingset,validationset,testset}.txt")
    sub = spec.folder + (f"/{variant}" if variant else "")
    msg = (f"dataset {label} not found {where}. Put the {spec.description} files at "
           f"{shown}/{sub}/Fold{{1..5}}/{split_names.strip()} (plain or .xz/.gz/.bz2)")
    if spec.gov_dir:
        msg += f"; the original layout {shown}/Gov/{variant}/{spec.gov_dir}/Fold{{1..5}}/ works too"
    return msg + "; or pass allow_synthetic=True for a labelled synthetic stand-in."


def dataset_available(name: str, variant: str | None = None, root: str | Path | None = None) -> bool:
    """Whether ``load_fold(name, ...)`` finds its files (always True for synthetic)."""
    spec = _spec(name)
    variant = _resolve_variant(spec, variant)
    if spec.family == "synthetic":
        return True
    base = data_root(root)
    if spec.family == "rcv1":
        from rankbench.data.rcv1 import rcv1_cached_home

        return rcv1_cached_home(base) is not None
    if base is None:
        return False
    for d in _letor_dirs(spec, variant, base):
        if all(_find_split_file(d / f"Fold{k}", s) is not None
               for k in range(1, spec.n_folds + 1) for s in SPLITS):
            return True
    return False


def load_fold(
    name: str,
    fold: int,
    split: str,
    variant: str | None = None,
    root: str | Path | None = None,
    *,
    null_policy: str = "error",
    sparse: bool | None = None,
    allow_synthetic: bool = False,
    cache: bool | str | Path = True,
    **params: Any,
) -> RankingData:
    """One split (train | vali | test) of one fold of a registered data set, as RankingData.

    LETOR data sets read ``<root>/<NAME>/<variant>/Fold<k>/<split file>`` (see
    ``letor_split_path`` for the accepted layouts); ``null_policy`` matters for
    OHSUMED ``Feature-null``; LETOR splits are dense unless ``sparse=True``.  RCV1 tasks and ``synthetic`` take their own ``params``
    (see ``rankbench.data.rcv1.load_rcv1_split`` and ``rankbench.data.synthetic``).
    A missing data set raises :class:`DatasetNotFound`, unless ``allow_synthetic``
    asks for a generated stand-in of the same shape (``synthetic=True``,
    ``meta["stand_in_for"] = name``).
    """
    spec = _spec(name)
    variant = _resolve_variant(spec, variant)
    _check_fold_split(spec, fold, split)
    if spec.family == "synthetic":
        from rankbench.data.synthetic import load_synthetic_split

        return load_synthetic_split(fold, split, variant=variant, **params)
    try:
        if spec.family == "rcv1":
            from rankbench.data.rcv1 import load_rcv1_split

            return load_rcv1_split(spec.name, split, orientation=variant,
                                   root=data_root(root), cache=cache, **params)
        if params:
            raise TypeError(f"load_fold({name!r}) got unexpected parameters {sorted(params)}")
        path = letor_split_path(spec.name, fold, split, variant, root)
    except DatasetNotFound:
        if not allow_synthetic:
            raise
        from rankbench.data.synthetic import stand_in_split

        return stand_in_split(spec, fold, split, variant=variant, **params)
    # every split of a LETOR data set gets the same layout: dense unless asked otherwise
    data = read_letor(path, null_policy=null_policy, sparse=bool(sparse),
                      n_features=spec.n_features, name=spec.name, cache=cache)
    meta = dict(data.meta)
    meta.update({"dataset": spec.name, "variant": variant, "fold": int(fold), "split": split})
    return RankingData(X=data.X, y=data.y, qid=data.qid, query_ptr=data.query_ptr,
                       name=spec.name, source=str(path), synthetic=False, meta=meta)
