"""Benchmarks behind `make bench`: each module `rankbench.bench.<part>` defines `run(quick)`."""

PARTS = ("data", "metrics", "ranksvm", "spd", "lambdamart", "accuracy", "peers", "shards", "startup",
         "targets")
