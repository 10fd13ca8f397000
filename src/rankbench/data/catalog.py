"""What rankbench knows about each benchmark: layout, shape, published statistics, missing-data message.

A leaf module (it imports nothing else from ``rankbench.data``): the registry, the RCV1
loader and the stand-in generator all read it, so none of them needs another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.plugins import Registry

SPLITS = ("train", "vali", "test")
# LETOR 3.0 names the split files train/vali/test.txt in QueryLevelNorm and
# trainingset/validationset/testset.txt in Feature-min / Feature-null.
LETOR_SPLIT_FILES = {
    "train": ("train.txt", "trainingset.txt"),
    "vali": ("vali.txt", "validationset.txt"),
    "test": ("test.txt", "testset.txt"),
}
PLAIN_SPLIT_FILES = {"train": ("train.txt",), "vali": ("vali.txt",), "test": ("test.txt",)}
LETOR3_VARIANTS = ("QueryLevelNorm", "Feature-min", "Feature-null")
FILE_FAMILIES = ("letor3", "letor4", "mslr", "yahoo", "istella")


class DatasetNotFound(FileNotFoundError):
    """A benchmark data set is not under the data root; the message says which files to put where."""


@dataclass(frozen=True)
class DatasetSpec:
    """What the registry knows about one benchmark: layout, shape and the papers' names for it."""

    name: str
    family: str  # letor3 | letor4 | mslr | yahoo | istella | rcv1 | synthetic | sharded
    description: str
    graded: bool
    n_folds: int
    variants: tuple[str | None, ...]
    default_variant: str | None
    n_features: int | None
    paper_names: tuple[str, ...]
    stats: dict[str, Any] = field(default_factory=dict)
    folder: str = ""  # LETOR: folder name in the original distribution
    gov_dir: str = ""  # LETOR 3.0 Gov sub-folder, e.g. "2003_td_dataset"
    # Other file families: folders under the data root that may hold the files (the
    # first is the one the missing-data message names) and each split's file names.
    folders: tuple[str, ...] = ()
    split_files: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(LETOR_SPLIT_FILES))
    n_levels: int = 2  # relevance labels 0 .. n_levels - 1
    sparse: bool = False  # the layout load_fold gives every split unless asked otherwise

    def info(self) -> dict[str, Any]:
        """A plain dict for reports and ``dataset_info``."""
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "labels": "graded" if self.graded else "binary",
            "graded": self.graded,
            "n_levels": self.n_levels,
            "n_folds": self.n_folds,
            "variants": list(self.variants),
            "default_variant": self.default_variant,
            "n_features": self.n_features,
            "paper_names": list(self.paper_names),
            "stats": dict(self.stats),
            "layout": self.layout(self.default_variant) if self.family in FILE_FAMILIES else None,
        }

    def layout(self, variant: str | None) -> str:
        """Where the files go under the data root, e.g. ``MSLR-WEB10K/Fold{1..5}/{train,vali,test}.txt``."""
        if self.family in ("letor3", "letor4"):
            place = self.folder + (f"/{variant}" if variant else "")
            k = 0 if variant in (None, "QueryLevelNorm") else 1
            names = [self.split_files[s][k] for s in SPLITS]
        else:
            place = self.folders[0]
            names = [self.split_files[s][0] for s in SPLITS]
        folds = f"/Fold{{1..{self.n_folds}}}" if self.n_folds > 1 else ""
        stem = _common_suffix_stem(names)
        return f"{place}{folds}/{stem}"


def _common_suffix_stem(names: list[str]) -> str:
    """``{train,vali,test}.txt`` from the three file names (shared prefix and suffix factored out)."""
    prefix = _shared(names)
    suffix = _shared([n[::-1] for n in names])[::-1]
    cores = [n[len(prefix): len(n) - len(suffix)] for n in names]
    return f"{prefix}{{{','.join(cores)}}}{suffix}"


def _shared(names: list[str]) -> str:
    out = ""
    for chars in zip(*names, strict=False):
        if len(set(chars)) > 1:
            break
        out += chars[0]
    return out


def _gov(name: str, year: int, kind: str, queries: int, docs: int, long: str) -> DatasetSpec:
    # Rough share of relevant documents, only to shape synthetic stand-ins: topic
    # distillation has about ten relevant pages per query, named/home page finding
    # about one in the ~1,000 documents of a query.
    rate = 0.012 if kind == "td" else 0.0012
    return DatasetSpec(
        name=name, family="letor3", graded=False, n_folds=5, variants=LETOR3_VARIANTS,
        default_variant="QueryLevelNorm", n_features=64, n_levels=2,
        description=f"LETOR 3.0 {long} (TREC {year} web track, .gov collection), binary relevance",
        paper_names=(name.upper(), f"{name[:2].upper()} {year}", f"{year}_{kind}_dataset"),
        stats={"n_queries": queries, "n_docs": docs, "approx_relevant_rate": rate},
        folder=name.upper(),
        gov_dir=f"{year}_{kind}_dataset",
    )


def _mslr(size: str, queries: int, docs: int) -> DatasetSpec:
    name = f"mslr_web{size.lower()}"
    return DatasetSpec(
        name=name, family="mslr", graded=True, n_folds=5, variants=(None,), default_variant=None,
        n_features=136, n_levels=5,
        description=f"Microsoft MSLR-WEB{size} (Bing, 136 features, relevance 0-4, 5 folds)",
        paper_names=(f"MSLR-WEB{size}", f"MSLR-WEB{size.lower()}", f"MSLR{size}"),
        stats={"n_queries": queries, "n_docs": docs},
        folders=(f"MSLR-WEB{size}", f"MSLR-WEB{size.lower()}", f"mslr-web{size.lower()}", name),
        split_files=dict(PLAIN_SPLIT_FILES),
    )


def _yahoo(k: int, split_queries: dict[str, int], split_docs: dict[str, int],
           n_used: int) -> DatasetSpec:
    return DatasetSpec(
        name=f"yahoo_set{k}", family="yahoo", graded=True, n_folds=1, variants=(None,),
        default_variant=None, n_features=700, n_levels=5, sparse=True,
        description=f"Yahoo! Learning to Rank Challenge set {k} (Webscope C14; 700 feature ids, "
                    f"{n_used} used in this set; relevance 0-4; one train/valid/test split)",
        paper_names=(f"Yahoo! LTRC set {k}", f"YAHOO LTRC set {k}", f"Yahoo set{k}"),
        stats={"n_queries": sum(split_queries.values()), "n_docs": sum(split_docs.values()),
               "split_queries": split_queries, "split_docs": split_docs,
               "n_features_used": n_used},
        # ltrc_yahoo.tar.bz2 unpacks to the six setK.{train,valid,test}.txt files
        folders=("ltrc_yahoo", "Yahoo", "yahoo", "yahoo_ltrc"),
        split_files={"train": (f"set{k}.train.txt",), "vali": (f"set{k}.valid.txt",),
                     "test": (f"set{k}.test.txt",)},
    )


# the catalogued (file) data sets, registered like every other plug-in (rankbench.plugins); data
# sets defined in code register through rankbench.data.registry.register_dataset
CATALOG: Registry[DatasetSpec] = Registry("catalogued dataset")
_CATALOGUED: dict[str, DatasetSpec] = {
    "ohsumed": DatasetSpec(
        name="ohsumed", family="letor3", graded=True, n_folds=5, variants=LETOR3_VARIANTS,
        default_variant="QueryLevelNorm", n_features=45, n_levels=3,
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
        default_variant=None, n_features=46, n_levels=3,
        description="LETOR 4.0 MQ2007 (Million Query track 2007, supervised setting, 3 levels)",
        paper_names=("MQ2007",), stats={"n_queries": 1692, "n_docs": 69623}, folder="MQ2007",
    ),
    "mq2008": DatasetSpec(
        name="mq2008", family="letor4", graded=True, n_folds=5, variants=(None,),
        default_variant=None, n_features=46, n_levels=3,
        description="LETOR 4.0 MQ2008 (Million Query track 2008, supervised setting, 3 levels)",
        paper_names=("MQ2008",),
        stats={"n_queries": 784, "n_docs": 15211, "labels": {0: 12279, 1: 2001, 2: 931}},
        folder="MQ2008",
    ),
    # LETOR 4.0 listwise setting: the same files as MQ2007 / MQ2008 with many relevance
    # levels per query (Lee & Lin 2014, Table (I)); same fold layout, own folder.
    "mq2007_list": DatasetSpec(
        name="mq2007_list", family="letor4", graded=True, n_folds=5, variants=(None,),
        default_variant=None, n_features=46, n_levels=10,  # many levels; 10 only shapes stand-ins
        description="LETOR 4.0 MQ2007-list (listwise setting: permutations of many documents per query)",
        paper_names=("MQ2007-list", "MQ2007 list"), stats={}, folder="MQ2007-list",
    ),
    "mq2008_list": DatasetSpec(
        name="mq2008_list", family="letor4", graded=True, n_folds=5, variants=(None,),
        default_variant=None, n_features=46, n_levels=10,  # many levels; 10 only shapes stand-ins
        description="LETOR 4.0 MQ2008-list (listwise setting: permutations of many documents per query)",
        paper_names=("MQ2008-list", "MQ2008 list"), stats={}, folder="MQ2008-list",
    ),
    # MSLR-WEB: 136 features, labels 0 (irrelevant) .. 4 (perfectly relevant), five
    # folds Fold1..Fold5 with train/vali/test.txt (the S1..S5 rotation), from the
    # dataset page https://www.microsoft.com/en-us/research/project/mslr/ . Query and
    # document counts from T.-Y. Liu, Learning to Rank for Information Retrieval
    # (Springer 2011), sect. 12.2: 31,531 queries / 3,771,126 documents (30K) and
    # 10,000 / 1,200,193 (10K); other sources give one document fewer (3,771,125 /
    # 1,200,192): not verified against the files here. The label distribution is
    # not published on the dataset page: not given.
    "mslr_web10k": _mslr("10K", 10000, 1200193),
    "mslr_web30k": _mslr("30K", 31531, 3771126),
    # Yahoo! LTR Challenge (Chapelle & Chang, JMLR W&CP 14, 2011; the statistics table
    # of the challenge's dataset page, mirrored at research.microsoft.com/en-us/um/
    # beijing/projects/letor/yahoodata.aspx): 700 feature ids in all (set 1 uses 519,
    # set 2 uses 596; undefined features are 0, values in [0, 1]), labels 0-4.
    # The label distribution: not verified here, not given.
    "yahoo_set1": _yahoo(1, {"train": 19944, "vali": 2994, "test": 6983},
                         {"train": 473134, "vali": 71083, "test": 165660}, 519),
    "yahoo_set2": _yahoo(2, {"train": 1266, "vali": 1266, "test": 3798},
                         {"train": 34815, "vali": 34881, "test": 103174}, 596),
    # Istella-S LETOR (the README of istella-s-letor.tar.gz, May 2016; Dato et al.,
    # ACM TOIS 35(2), 2016): 33,018 queries, 3,408,630 query-document pairs (irrelevant
    # pairs sampled to about 103 per query), 220 features, split 60% / 20% / 20% into
    # train / vali / test; the archive unpacks to istella-s-letor/sample/. Labels 0-4
    # as Dato et al. describe them (not checked against the files here); the per-split
    # query counts and the label distribution: not verified, not given.
    "istella_s": DatasetSpec(
        name="istella_s", family="istella", graded=True, n_folds=1, variants=(None,),
        default_variant=None, n_features=220, n_levels=5,
        description="Istella-S LETOR (Istella web search, 220 features, relevance 0-4, "
                    "one 60/20/20 train/vali/test split)",
        paper_names=("Istella-S", "istella-s"),
        stats={"n_queries": 33018, "n_docs": 3408630,
               "split_share": {"train": 0.6, "vali": 0.2, "test": 0.2}},
        folders=("istella-s-letor/sample", "istella-s/sample", "istella-s-letor", "istella-s",
                 "istella_s"),
        split_files=dict(PLAIN_SPLIT_FILES),
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
        n_levels=3,
        description="Generated data: LETOR-like queries (default) or an RCV1-like sparse binary task",
        paper_names=(),
    ),
    # not under the data root: a folder made by `rankbench data shard` (rankbench.data.sharded),
    # given as load_fold(..., path=...) / dataset.path=...
    "sharded": DatasetSpec(
        name="sharded", family="sharded", graded=True, n_folds=1, variants=(None,),
        default_variant=None, n_features=None,
        description="A data set sharded on disk by `rankbench data shard` (its folder given as path)",
        paper_names=(),
    ),
}


for _name, _spec in _CATALOGUED.items():
    CATALOG.add(_name, _spec, module=__name__)


def list_datasets() -> list[str]:
    """Names ``load_fold`` accepts, in the catalogue's order."""
    return list(CATALOG.items())


def dataset_info(name: str) -> dict[str, Any]:
    """Description, binary or graded labels, number of folds, variants and the papers' names for ``name``."""
    return dataset_spec(name).info()


def dataset_spec(name: str) -> DatasetSpec:
    """The spec registered under ``name`` (case-insensitive); ValueError listing the known names."""
    key = name.lower()
    specs = CATALOG.items()
    if key not in specs:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(specs)}")
    return specs[key]


def missing_message(spec: DatasetSpec, variant: str | None, base: Path | None, *,
                    root_option: str = "root=...",
                    stand_in_option: str = "allow_synthetic=True") -> str:
    """What to put where for the absent data set ``spec`` (``base`` = the data root, or None when
    unset); ``root_option`` / ``stand_in_option``: how the caller's interface spells the data
    root and the generated stand-in (the Python API's by default)."""
    where = (f"under the data root {base}" if base is not None
             else f"because no data root is set (pass {root_option} or set RANKBENCH_DATA)")
    shown = str(base) if base is not None else "$RANKBENCH_DATA"
    label = spec.name + (f" (variant {variant})" if variant else "")
    if spec.family == "rcv1":
        from sklearn.datasets import get_data_home

        return (f"dataset {label} not found: scikit-learn's RCV1-v2 cache (RCV1/samples*.pkl and "
                f"RCV1/sample_topics*.pkl, about 650 MB) is in none of {shown}/rcv1, "
                f"sklearn's data home {get_data_home()} or a data_home= you pass. While online, "
                f"run sklearn.datasets.fetch_rcv1(data_home='{shown}/rcv1') once, or call "
                f"load_fold('{spec.name}', 1, split, download=True, data_home=...); "
                f"or pass {stand_in_option} for a labelled stand-in.")
    msg = (f"dataset {label} not found {where}. Put the {spec.description} files at "
           f"{shown}/{spec.layout(variant)} (plain or .xz/.gz/.bz2)")
    if spec.gov_dir:
        msg += f"; the original layout {shown}/Gov/{variant}/{spec.gov_dir}/Fold{{1..5}}/ works too"
    elif len(spec.folders) > 1:
        others = [f"{f}/" for f in spec.folders[1:]]
        msg += f"; the folder {spec.folders[0]}/ may also be {', '.join(others[:-1])} or {others[-1]}"
    return msg + f"; or pass {stand_in_option} for a labelled synthetic stand-in."
