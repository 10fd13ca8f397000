"""`python -m rankbench.data`: which data sets are where, and their statistics per fold.

    python -m rankbench.data                   # every data set: available or not, and why
    python -m rankbench.data stats ohsumed     # queries / documents / labels of each split
    python -m rankbench.data stats ohsumed --variant Feature-null --null-policy zero
    python -m rankbench.data list              # every data set: present / absent, where, source
    python -m rankbench.data check mq2008      # layout and sha256 against the shipped manifest
    python -m rankbench.data fetch istella_s   # download, check, unpack (or print the steps)
    python -m rankbench.data shard train.txt.gz OUT --shards 8   # rankbench.data.sharded

``list``, ``check``, ``fetch`` and ``shard`` each have their own parser (``_COMMANDS``).
"""

from __future__ import annotations

import argparse
import sys

from rankbench.data.registry import (
    DatasetNotFound,
    data_root,
    dataset_available,
    dataset_info,
    list_datasets,
    load_fold,
)


def _status(root) -> list[str]:
    out = [f"data root: {root if root is not None else '(not set: pass --root or set RANKBENCH_DATA)'}"]
    for name in list_datasets():
        info = dataset_info(name)
        if info["family"] == "synthetic":
            out.append(f"  {name:30s} generated (variants letor_like, rcv1_like)")
            continue
        if info["family"] == "sharded":
            out.append(f"  {name:30s} a folder made by `rankbench data shard` (dataset.path=...)")
            continue
        for variant in info["variants"]:
            label = name + (f" [{variant}]" if variant else "")
            try:
                available = dataset_available(name, variant, root)
            except (ValueError, OSError) as exc:  # two candidate files, a directory in a file's place
                out.append(f"  {label:30s} unusable: {exc}")
                continue
            if available:
                out.append(f"  {label:30s} available")
            elif variant != info["default_variant"]:
                out.append(f"  {label:30s} missing")
            else:
                try:
                    load_fold(name, 1, "train", variant, root=root)
                    out.append(f"  {label:30s} incomplete (fold 1 train found, other files missing)")
                except DatasetNotFound as exc:
                    out.append(f"  {label:30s} missing: {exc}")
    return out


def _stats(name: str, variant: str | None, root, null_policy: str) -> list[str]:
    info = dataset_info(name)
    out = [f"{name} ({info['description']})"]
    for fold in range(1, info["n_folds"] + 1):
        for split in ("train", "vali", "test"):
            d = load_fold(name, fold, split, variant, root=root, null_policy=null_policy)
            s = d.describe()
            labels = " ".join(f"{k}:{v}" for k, v in s["labels"].items())
            out.append(f"  fold {fold} {split:5s} queries {s['n_queries']:6d}  docs {s['n_docs']:8d}  "
                       f"features {s['n_features']:6d}  labels {labels}"
                       + ("  [synthetic]" if d.synthetic else ""))
    return out


# ---------------------------------------------------------------- list / check / fetch


def _list_main(argv: list[str]) -> int:
    """``list``: every catalogued data set, present or absent, where it was looked for, its source."""
    from rankbench.data.sources import catalogue_rows

    ap = argparse.ArgumentParser(prog="python -m rankbench.data list",
                                 description="every catalogued data set: present / absent, where "
                                             "rankbench looked, how to get it, checksums known")
    ap.add_argument("--root", help="data root (default: RANKBENCH_DATA)")
    args = ap.parse_args(argv)
    root = data_root(args.root)
    print(f"data root: {root if root is not None else '(not set: pass --root or set RANKBENCH_DATA)'}")
    rows = catalogue_rows(root)
    width = {k: max(len(r[k]) for r in rows) for k in ("name", "status", "method", "sums")}
    for r in rows:
        print(f"  {r['name']:{width['name']}s}  {r['status']:{width['status']}s}  "
              f"{r['method']:{width['method']}s}  {r['sums']:{width['sums']}s}  {r['source']}")
        if r["status"] not in ("generated", "made"):
            print(f"  {'':{width['name']}s}  looked in {r['where']}")
    print("Get one: `python -m rankbench.data fetch NAME` (downloads it, or prints the steps); "
          "docs/datasets.md says which URLs and sums are official and which unverified.")
    return 0


def _name_and_root(ap: argparse.ArgumentParser, argv: list[str]):
    """Parse NAME and --root (plus ``ap``'s own options): (args, root), root None when unset
    (said on stderr)."""
    ap.add_argument("name", choices=list_datasets(), metavar="NAME")
    ap.add_argument("--root", help="data root (default: RANKBENCH_DATA)")
    args = ap.parse_args(argv)
    root = data_root(args.root)
    if root is None:
        print("error: no data root: pass --root or set RANKBENCH_DATA", file=sys.stderr)
    return args, root


def _check_main(argv: list[str]) -> int:
    """``check NAME``: the files' layout and sha256 against the manifest shipped with rankbench."""
    from rankbench.data.sources import check_dataset

    ap = argparse.ArgumentParser(prog="python -m rankbench.data check",
                                 description="check a data set's files (layout and sha256) "
                                             "against the manifest shipped with rankbench")
    args, root = _name_and_root(ap, argv)
    if root is None:
        return 1
    try:
        report = check_dataset(args.name, root)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


def _fetch_main(argv: list[str]) -> int:
    """``fetch NAME``: download, check and unpack into the data root, or print the steps."""
    from pathlib import Path

    from rankbench.data.fetch import FetchError, ManualSteps, fetch_dataset

    ap = argparse.ArgumentParser(prog="python -m rankbench.data fetch",
                                 description="download (resumable), check and unpack a data set "
                                             "into the data root; prints the steps where a licence "
                                             "or a web drive needs a browser")
    ap.add_argument("--url", default="", help="download this archive instead (e.g. a mirror)")
    ap.add_argument("--archive", type=Path, help="unpack this already downloaded archive instead")
    ap.add_argument("--sha256", default="", help="the archive's sha256, checked before unpacking")
    ap.add_argument("--unverified", action="store_true",
                    help="accept a download no checksum can verify")
    args, root = _name_and_root(ap, argv)
    if root is None:
        return 1
    try:
        fetch_dataset(args.name, root, url=args.url, sha256=args.sha256.lower(),
                      archive=args.archive, unverified=args.unverified)
    except ManualSteps as exc:
        print(f"{args.name} cannot be downloaded by rankbench; to get it:")
        print("\n".join(f"  {k}. {step}" for k, step in enumerate(exc.steps, 1)))
        return 2
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _shard_main(argv: list[str]) -> int:
    """``shard``: split a LETOR file into query shards on disk (rankbench.data.sharded)."""
    from rankbench.data.sharded import shard_main

    return shard_main(argv)


_COMMANDS = {"list": _list_main, "check": _check_main, "fetch": _fetch_main, "shard": _shard_main}


def main(argv: list[str] | None = None) -> int:
    """Print data-set availability (default) or per-split statistics (``stats NAME``); the
    commands of ``_COMMANDS`` parse their own arguments."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in _COMMANDS:
        return _COMMANDS[argv[0]](argv[1:])
    ap = argparse.ArgumentParser(prog="python -m rankbench.data",
                                 epilog="more commands: " + ", ".join(
                                     f"{c} (python -m rankbench.data {c} -h)" for c in _COMMANDS))
    ap.add_argument("command", nargs="?", default="status", choices=("status", "stats"))
    ap.add_argument("name", nargs="?")
    ap.add_argument("--variant")
    ap.add_argument("--root", help="data root (default: RANKBENCH_DATA)")
    ap.add_argument("--null-policy", default="error", choices=("error", "zero", "query_min"))
    args = ap.parse_args(argv)
    root = data_root(args.root)
    try:
        if args.command == "status":
            lines = _status(root)
        else:
            if not args.name:
                ap.error("stats needs a data set name: " + ", ".join(list_datasets()))
            lines = _stats(args.name, args.variant, root, args.null_policy)
    except (DatasetNotFound, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
