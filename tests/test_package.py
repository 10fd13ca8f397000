"""The package's boundary and the user's path (issue 22).

- The library (data, objective, optim, estimators, metrics, boosting, significance, distributed)
  imports nothing of the harness and no Hydra, OmegaConf, pandas or matplotlib: checked by
  importing every library module in a fresh interpreter and reading ``sys.modules``.
- The wheel: built from this checkout, installed (not editable) into a fresh virtual
  environment, it runs a small sweep and ``rankbench results`` from another directory: its
  configs ship inside the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY_PACKAGES = ("rankbench.data", "rankbench.objective", "rankbench.optim",
                    "rankbench.estimators", "rankbench.metrics", "rankbench.boosting")
LIBRARY_MODULES = ("rankbench", "rankbench.significance", "rankbench.distributed",
                   "rankbench.parallel", "rankbench.plugins", "rankbench.verbose")
HARNESS = ("config", "plan", "spec", "runner", "record", "store", "selection", "report", "cli",
           "bench", "peers", "reproduce", "progress", "tuning", "trec", "sysinfo", "warmup",
           "sweep_callback")
# subclasses scikit-learn's transformer classes, and scikit-learn's own imports load pandas
SKLEARN_MODULES = ("rankbench.estimators.kernel_map",)

_PROBE = """
import importlib, pkgutil, sys
mods = list({modules!r})
for pkg in {packages!r}:
    p = importlib.import_module(pkg)
    mods.append(pkg)
    mods += [i.name for i in pkgutil.walk_packages(p.__path__, pkg + ".")
             if not i.name.rsplit(".", 1)[-1].startswith("__") and i.name not in {skip!r}]
for m in mods:
    importlib.import_module(m)
third = sorted({{m.split(".")[0] for m in sys.modules}} & set({third!r}))
harness = sorted(m for m in sys.modules if m.count(".") >= 1 and m.split(".")[0] == "rankbench"
                 and m.split(".")[1] in {harness!r})
print(len(mods), third, harness)
"""


def _no_path_env() -> dict[str, str]:
    """The environment without PYTHONPATH (a checkout's src on it would make pip see rankbench
    installed already) and without RANKBENCH_CONF_DIR."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANKBENCH_CONF_DIR")}


def _probe(modules, packages, third, skip=()) -> str:
    code = _PROBE.format(modules=list(modules), packages=list(packages), third=list(third),
                         harness=list(HARNESS), skip=list(skip))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stderr
    return p.stdout.split(maxsplit=1)[1].strip()


def test_the_library_imports_no_harness_and_no_hydra_pandas_or_matplotlib():
    third = ("hydra", "omegaconf", "pandas", "matplotlib")
    assert _probe(LIBRARY_MODULES, LIBRARY_PACKAGES, third, skip=SKLEARN_MODULES) == "[] []"
    # scikit-learn brings pandas with it; the harness, Hydra and matplotlib stay out
    assert _probe(SKLEARN_MODULES, (), ("hydra", "omegaconf", "matplotlib")) == "[] []"


@pytest.mark.slow
def test_the_wheel_runs_a_sweep_and_results_from_another_directory(tmp_path):
    """pip install of the built wheel (no -e) into a fresh venv; the CLI from elsewhere."""
    dist, env_dir, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    work.mkdir()
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("rankbench-*.whl")
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=1200, env=_no_path_env())
    assert install.returncode == 0, install.stderr[-2000:]
    env = _no_path_env()
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    where = subprocess.run([str(py), "-c", "import rankbench; print(rankbench.__file__)"],
                           capture_output=True, text=True, cwd=work, env=env, timeout=120)
    assert str(env_dir) in where.stdout and str(ROOT) not in where.stdout, where
    rb = env_dir / "bin" / "rankbench"
    sweep = subprocess.run([str(rb), "-m", "dataset=synthetic", "solver=prsvm_plus",
                            "solver.log10_C=range(-3,0)", "progress=false"],
                           capture_output=True, text=True, cwd=work, env=env, timeout=1200)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert "model selection on vali.ndcg@10" in sweep.stdout + sweep.stderr
    res = subprocess.run([str(rb), "results", "--format", "csv"], capture_output=True, text=True,
                         cwd=work, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [line for line in res.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 15 and all("prsvm_plus" in r and ",ok," in r for r in rows), res.stdout
    assert (work / "results" / "local" / "adhoc").is_dir()  # an ad-hoc sweep goes to the local store
