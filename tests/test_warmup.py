"""``python -m rankbench.warmup``: after it, a new process finds the kernels it calls in numba's
cache (numba's own per-dispatcher cache hit / miss counters), so it compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankbench.warmup import PARTS, main, warm_up

SRC = str(Path(__file__).resolve().parents[1] / "src")

# a LETOR parse in a fresh process; prints numba's cache counters of every parse kernel it ran
PARSE_AND_COUNT = """
import json, sys
import importlib, pkgutil
import numba
from rankbench.data import letor
d = letor.read_letor(sys.argv[1], cache=False)
modules = [importlib.import_module(f"rankbench.data.letor.{m.name}") for m in pkgutil.iter_modules(letor.__path__)]
stats = {n: f.stats for mod in modules for n, f in vars(mod).items()
         if isinstance(f, numba.core.registry.CPUDispatcher)}
print(json.dumps({n: [sum(s.cache_hits.values()), sum(s.cache_misses.values())]
                  for n, s in stats.items() if s.cache_hits or s.cache_misses}))
"""


def _run(args: list[str], cache_dir: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir),
           "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=600, check=True).stdout


@pytest.mark.slow
def test_after_warmup_a_new_process_compiles_no_parse_kernel(tmp_path):
    toy = tmp_path / "toy.txt"
    toy.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i}.5 2:{i % 2} #docid = d{i}\n" for i in range(8)))
    cold = tmp_path / "cold"
    # the check can fail: on an empty cache the same parse misses
    before = json.loads(_run(["-c", PARSE_AND_COUNT, str(toy)], cold).splitlines()[-1])
    assert before["fill_letor"][1] > 0 and all(miss > 0 for _, miss in before.values())
    cache = tmp_path / "numba"
    # two worker processes (spawned): what they compile is in the cache the next process reads
    out = _run(["-m", "rankbench.warmup", "--jobs", "2", "parse", "synthetic"], cache)
    assert "parse" in out and "synthetic" in out
    after = json.loads(_run(["-c", PARSE_AND_COUNT, str(toy)], cache).splitlines()[-1])
    # the kernels called from Python load from the cache (the helpers they inline are not
    # looked up at all then)
    assert "fill_letor" in after and after.keys() <= before.keys()
    assert all(hit > 0 and miss == 0 for hit, miss in after.values()), after


def test_parts_are_named_and_unknown_ones_refused(capsys):
    assert set(PARTS) == {"parse", "ranksvm", "spd", "metrics", "lambdamart", "synthetic"}
    with pytest.raises(ValueError, match="unknown warm-up part"):
        warm_up(["nope"])
    assert set(warm_up(["synthetic"])) == {"synthetic"}
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        warm_up(["synthetic"], jobs=0)
    assert warm_up([], jobs=2) == {}
    with pytest.raises(SystemExit):
        main(["nope"])
    assert "unknown warm-up part" in capsys.readouterr().err


def test_the_ranksvm_part_splits_into_every_oracle_with_kernels_and_the_fit():
    from rankbench.objective.base import ORACLES
    from rankbench.warmup import _units

    units = _units("ranksvm")
    assert units[-1] == ("_ranksvm_fit", ())
    assert [args[0] for _, args in units[:-1]] == [n for n, c in ORACLES.items() if c.numba_kernels]
    assert _units("spd") == [("spd", ())]
