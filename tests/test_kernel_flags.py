"""The sweeps (and the sorts, groupings and SPD step coefficients) shared by the fused passes (compiled with ``fused.FUSED_FASTMATH``) and the strict
per-query paths state their numba flags: a function that leaves ``fastmath`` unset inherits its
first caller's, and numba keeps one compiled version per signature (in memory and in the cache),
so the per-query paths' bits depended on which path compiled the sweep first."""

import importlib
import os
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

import rankbench
from rankbench.objective import sweeps


def test_every_sweep_that_is_not_inlined_states_fastmath():
    """Inlined functions take their caller's flags on purpose (the fused passes' bodies)."""
    loose = [name for name, f in vars(sweeps).items()
             if isinstance(f, CPUDispatcher) and f.__module__ == sweeps.__name__
             and f.targetoptions.get("inline") != "always" and "fastmath" not in f.targetoptions]
    assert loose == []


def _kernels():
    """Every numba function defined in the package (``__main__`` modules are not imported)."""
    out = []
    for m in pkgutil.walk_packages(rankbench.__path__, "rankbench."):
        if m.name.endswith("__main__"):
            continue
        mod = importlib.import_module(m.name)
        out += [f for f in vars(mod).values()
                if isinstance(f, CPUDispatcher) and f.__module__ == mod.__name__]
    return out


def _names(code):
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _callees(f):
    """The numba functions f's body names: globals of its module, and attributes of the modules
    among them (``score_order.wide_query``)."""
    g = f.py_func.__globals__
    names = _names(f.py_func.__code__)
    found = []
    for n in names:
        v = g.get(n)
        if isinstance(v, CPUDispatcher):
            found.append(v)
        elif isinstance(v, types.ModuleType):
            found += [a for a in (getattr(v, m, None) for m in names) if isinstance(a, CPUDispatcher)]
    return found


def test_no_function_a_fastmath_kernel_calls_leaves_its_flags_unset():
    """From every kernel compiled with fastmath flags (the fused passes, the SPD steps, the dense
    products), through the bodies it inlines (which take its flags on purpose), every function
    it calls that is not inlined states ``fastmath``: the same function is called by strict
    paths too (the per-query sorts and groupings, the sparse SPD kernel's ``learner_coefficients``),
    and left unset it would take the flags of whichever caller compiled it first.  Before this
    rule, the walk found ``score_order._sort_query``, ``score_order._group_query`` and
    ``pair_steps.learner_coefficients``."""
    fast = [f for f in _kernels() if f.targetoptions.get("fastmath")]
    assert len(fast) >= 8  # the walk sees the fused tree and counting passes and the SPD kernel
    loose = set()

    def walk(f, path, seen):
        for c in _callees(f):
            key = f"{c.__module__}.{c.__name__}"
            if key in seen:
                continue
            seen.add(key)
            if c.targetoptions.get("inline") == "always":
                walk(c, path + [key], seen)
            elif "fastmath" not in c.targetoptions:
                loose.add(" > ".join(path + [key]))

    for f in fast:
        walk(f, [f"{f.__module__}.{f.__name__}"], set())
    assert sorted(loose) == []


@pytest.mark.long
def test_a_sweep_compiled_after_the_fused_pass_keeps_ieee_arithmetic(tmp_path):
    """In a process with an empty numba cache, the fused tree passes compile first; the tree's
    ascending and descending sweeps must then still give their Python functions' bits (IEEE
    float64, no contraction).  Without the stated flag they differed (2 of 2).  It compiles the
    tree oracle's kernels from nothing (82 s of ``make test``'s 13 min on one of its two
    workers), so it runs in ``make test-long``; ``make test`` keeps the static check of the same
    rule (``test_no_function_a_fastmath_kernel_calls_leaves_its_flags_unset``)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("_flag_probe.py"))],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("differ 0"), out.stdout
