"""`python -m rankbench.data`: which data sets are where, and their statistics per fold.

    python -m rankbench.data                   # every data set: available or not, and why
    python -m rankbench.data stats ohsumed     # queries / documents / labels of each split
    python -m rankbench.data stats ohsumed --variant Feature-null --null-policy zero
    python -m rankbench.data shard train.txt.gz OUT --shards 8   # rankbench.data.sharded
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


def main(argv: list[str] | None = None) -> int:
    """Print data-set availability (default) or per-split statistics (``stats NAME``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["shard"]:  # its own parser (rankbench.data.sharded.shard_main)
        from rankbench.data.sharded import shard_main

        return shard_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m rankbench.data")
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
