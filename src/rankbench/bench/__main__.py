"""`python -m rankbench.bench [part ...] [--quick]`: run benchmarks, print and store their rows."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from importlib import import_module
from pathlib import Path

from rankbench.bench import PARTS


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmark parts (all by default); write results/bench/<part>.json."""
    ap = argparse.ArgumentParser(prog="python -m rankbench.bench")
    ap.add_argument("parts", nargs="*", default=list(PARTS), help=f"subset of {PARTS}")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--out", default="results/bench", help="folder for the JSON rows")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    for part in args.parts:
        if part not in PARTS:
            ap.error(f"unknown benchmark part {part!r}; known: {', '.join(PARTS)}")
        try:
            mod = import_module(f"rankbench.bench.{part}")
        except ModuleNotFoundError as exc:
            if exc.name == f"rankbench.bench.{part}":
                print(f"[{part}] not built yet: skipped")
                continue
            raise
        rows = mod.run(quick=args.quick)
        meta = {"machine": platform.node(), "processor": platform.processor(),
                "python": sys.version.split()[0], "quick": args.quick}
        (out / f"{part}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"\n== {part} ==")
        print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
