"""Dataset registry: where each benchmark lives under the data root and how to load one fold.

``load_fold(name, fold, split)`` finds the files of a LETOR 3.0 / 4.0, MSLR-WEB, Yahoo!
LTR or Istella-S data set, an RCV1 binary task or the synthetic generator, and returns
a :class:`RankingData`.  The data root is the ``root`` argument or the
``RANKBENCH_DATA`` environment variable.  What is known about each data set (layout,
shape, published statistics) lives in :mod:`rankbench.data.catalog`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rankbench.data.catalog import (
    FILE_FAMILIES,
    SPLITS,
    DatasetNotFound,
    DatasetSpec,
    dataset_info,
    dataset_spec,
    list_datasets,
    missing_message,
)
from rankbench.data.letor import read_letor
from rankbench.data.ranking_data import MAX_LABEL, RankingData
from rankbench.plugins import Registry

__all__ = ["DatasetNotFound", "DatasetSpec", "data_root", "dataset_available", "dataset_info",
           "dataset_names", "letor_split_path", "list_datasets", "load_fold", "load_split",
           "register_dataset"]

COMPRESSED_SUFFIXES = ("", ".xz", ".gz", ".bz2")


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


def _dataset_dirs(spec: DatasetSpec, variant: str | None, root: Path) -> list[Path]:
    """Candidate folders holding the data set (its ``Fold<k>`` folders or, single-fold, its files)."""
    if spec.family not in ("letor3", "letor4"):
        return [root / f for f in spec.folders]
    names = [spec.folder, spec.folder.lower(), spec.name]
    out: list[Path] = []
    for base in (root, root / "LETOR3.0", root / "LETOR4.0"):
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


def _split_candidates(spec: DatasetSpec, variant: str | None, root: Path, fold: int,
                      split: str) -> list[Path]:
    """Every existing path (file or not) that the layouts allow for ``split`` of ``fold``, in layout order."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for d in _dataset_dirs(spec, variant, root):
        folder = d / f"Fold{fold}" if spec.n_folds > 1 else d
        if not folder.is_dir():
            continue
        for fname in spec.split_files[split]:
            for suffix in COMPRESSED_SUFFIXES:
                p = folder / f"{fname}{suffix}"
                try:
                    st = p.stat()
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:  # one file seen through two layouts
                    seen.add((st.st_dev, st.st_ino))
                    found.append(p)
    return found


def _split_file(spec: DatasetSpec, variant: str | None, root: Path, fold: int, split: str) -> Path | None:
    """The one file holding ``split`` of ``fold``, None if absent; refuses directories and ambiguity."""
    found = _split_candidates(spec, variant, root, fold, split)
    for p in found:
        if p.is_dir():
            raise IsADirectoryError(f"{p} is a directory, not the {split} file of {spec.name} "
                                    f"fold {fold}: move the directory away or put the file there")
    if len(found) > 1:
        raise ValueError(f"{spec.name} fold {fold} {split}: {len(found)} files could hold it: "
                         f"{', '.join(str(p) for p in found)}; remove or rename all but one "
                         "(rankbench never picks one silently)")
    return found[0] if found else None


def letor_split_path(name: str, fold: int, split: str, variant: str | None = None,
                     root: str | Path | None = None) -> Path:
    """The file holding ``split`` of ``fold`` of a file-based data set; raises DatasetNotFound.

    ValueError when two files could hold it (e.g. ``vali.txt`` and ``vali.txt.xz``),
    IsADirectoryError when the path is a directory: never a silent pick.
    """
    spec = dataset_spec(name)
    if spec.family not in FILE_FAMILIES:
        raise ValueError(f"{name!r} is not read from LETOR-format files")
    variant = _resolve_variant(spec, variant)
    _check_fold_split(spec, fold, split)
    base = data_root(root)
    p = _split_file(spec, variant, base, fold, split) if base is not None else None
    if p is None:
        raise DatasetNotFound(missing_message(spec, variant, base))
    return p


def _check_fold_split(spec: DatasetSpec, fold: int, split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if isinstance(fold, bool) or int(fold) != fold or not 1 <= fold <= spec.n_folds:
        raise ValueError(f"fold must be an integer in 1..{spec.n_folds} for {spec.name!r}, got {fold!r}")


def dataset_available(name: str, variant: str | None = None, root: str | Path | None = None) -> bool:
    """Whether ``load_fold(name, ...)`` finds every file of every fold (always True for synthetic).

    Raises like ``load_fold`` when a split's file is ambiguous or a directory.
    """
    spec = dataset_spec(name)
    variant = _resolve_variant(spec, variant)
    if spec.family in ("synthetic", "sharded"):  # generated, or a folder given by path
        return True
    base = data_root(root)
    if spec.family == "rcv1":
        from rankbench.data.rcv1 import rcv1_cached_home

        return rcv1_cached_home(base) is not None
    if base is None:
        return False
    return all(_split_file(spec, variant, base, k, s) is not None
               for k in range(1, spec.n_folds + 1) for s in SPLITS)


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
    max_label: int | None = MAX_LABEL,
    **params: Any,
) -> RankingData:
    """One split (train | vali | test) of one fold of a registered data set, as RankingData.

    File-based data sets read ``<root>/<layout>`` (``dataset_info(name)["layout"]``;
    ``letor_split_path`` lists the accepted layouts); ``null_policy`` matters for
    OHSUMED ``Feature-null``; ``max_label`` is ``read_letor``'s (a label above it is an error
    naming the file and line; None lifts the limit).  Every split of a data set gets its registered layout
    (dense, CSR for Yahoo!) unless ``sparse`` says otherwise.  RCV1 tasks and
    ``synthetic`` take their own ``params`` (see ``rankbench.data.rcv1.load_rcv1_split``
    and ``rankbench.data.synthetic``).  A missing data set raises
    :class:`DatasetNotFound`, unless ``allow_synthetic`` asks for a generated stand-in
    of the same shape (``synthetic=True``, ``meta["stand_in_for"] = name``; see
    ``rankbench.data.stand_in``).
    """
    spec = dataset_spec(name)
    variant = _resolve_variant(spec, variant)
    _check_fold_split(spec, fold, split)
    if spec.family == "synthetic":
        from rankbench.data.synthetic import load_synthetic_split

        return load_synthetic_split(fold, split, variant=variant, **params)
    if spec.family == "sharded":
        from rankbench.data.sharded import load_sharded_split

        return load_sharded_split(fold, split, **params)
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
        from rankbench.data.stand_in import stand_in_split

        return stand_in_split(spec, fold, split, variant=variant, **params)
    data = read_letor(path, null_policy=null_policy,
                      sparse=spec.sparse if sparse is None else bool(sparse),
                      n_features=spec.n_features, max_label=max_label, name=spec.name, cache=cache)
    meta = {**data.meta, "dataset": spec.name, "variant": variant, "fold": int(fold), "split": split}
    return replace(data, name=spec.name, source=str(path), synthetic=False, meta=meta)


# ---------------------------------------------------------------- data sets defined in code
Loader = Callable[..., RankingData]
# name -> loader(fold=, split=, seed=, variant=, **data_params) -> RankingData: a data set the
# catalogue does not know, defined in code (a user's module listed in the config's
# solver_modules, a test's toy data); a run names it like any other data set
# the data sets defined in rankbench's own code (single_query: ohsumed_one_query ...); a loader
# may carry ``available(variant, root) -> bool`` (else it is always available) and take ``root``
LOADERS: Registry[Loader] = Registry("dataset", ("rankbench.data.single_query",))


def register_dataset(name: str) -> Callable[[Loader], Loader]:
    """Decorator: register ``loader(fold=, split=, seed=, variant=, **data_params)`` as the data
    set ``name`` (a name of the catalogue cannot be taken)."""
    if name in list_datasets():
        raise ValueError(f"dataset {name!r} is catalogued already (rankbench.data.catalog)")
    return LOADERS.register(name)


def loader_available(name: str, variant: str | None = None, root: str | Path | None = None) -> bool:
    """Whether the data set ``name`` defined in code can load (its loader's ``available``, if it
    declares one: e.g. the LETOR files it reads are present)."""
    available = getattr(LOADERS.get(name), "available", None)
    return True if available is None else bool(available(variant, root))


def dataset_names() -> list[str]:
    """Every data set a run can name: the catalogue's and those registered in code, sorted."""
    return sorted({*list_datasets(), *LOADERS.names()})


def describe_missing(name: str, variant: str | None = None, root: str | Path | None = None, *,
                     root_option: str = "root=...",
                     stand_in_option: str = "allow_synthetic=True") -> str:
    """What to put where for the absent catalogued data set ``name``, the options spelt as the
    caller's interface spells them (``catalog.missing_message``)."""
    spec = dataset_spec(name)
    return missing_message(spec, _resolve_variant(spec, variant), data_root(root),
                           root_option=root_option, stand_in_option=stand_in_option)


def load_split(name: str, fold: int, split: str, variant: str | None = None,
               root: str | Path | None = None, *, run_seed: int = 0,
               **data_params: Any) -> RankingData:
    """One split of a data set a run names: a loader registered in code (called with the run's
    seed as ``seed=``), else the catalogue's ``load_fold`` (whose own ``data_params`` may hold a
    generator's ``seed``); ValueError naming the known data sets."""
    if name in LOADERS:
        loader = LOADERS.get(name)
        if root is not None and "root" in inspect.signature(loader).parameters:
            data_params = {**data_params, "root": root}
        return loader(fold=fold, split=split, seed=run_seed, variant=variant, **data_params)
    if name not in list_datasets():
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(dataset_names())}")
    return load_fold(name, fold, split, variant=variant, root=root, **data_params)
