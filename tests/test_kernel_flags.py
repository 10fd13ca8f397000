"""The sweeps shared by the fused passes (compiled with ``fused.FUSED_FASTMATH``) and the strict
per-query paths state their numba flags: a function that leaves ``fastmath`` unset inherits its
first caller's, and numba keeps one compiled version per signature (in memory and in the cache),
so the per-query paths' bits depended on which path compiled the sweep first."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

from rankbench.objective import sweeps


def test_every_sweep_that_is_not_inlined_states_fastmath():
    """Inlined functions take their caller's flags on purpose (the fused passes' bodies)."""
    loose = [name for name, f in vars(sweeps).items()
             if isinstance(f, CPUDispatcher) and f.__module__ == sweeps.__name__
             and f.targetoptions.get("inline") != "always" and "fastmath" not in f.targetoptions]
    assert loose == []


@pytest.mark.slow
def test_a_sweep_compiled_after_the_fused_pass_keeps_ieee_arithmetic(tmp_path):
    """In a process with an empty numba cache, the fused tree passes compile first; the tree's
    ascending and descending sweeps must then still give their Python functions' bits (IEEE
    float64, no contraction).  Without the stated flag they differed (2 of 2)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("_flag_probe.py"))],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("differ 0"), out.stdout
