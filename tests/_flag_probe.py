"""Run by test_kernel_flags: the fused tree passes compile first, then the strict sweeps are
compared with their Python functions; prints "differ <count>"."""

import numpy as np

from rankbench.objective import make_oracle
from rankbench.objective.sweeps import FW_LANES, tree_fun_ascending, tree_fun_descending

rng = np.random.default_rng(5)
nq, per = 1000, 40
N = nq * per
ptr = np.arange(0, N + 1, per, dtype=np.int64)
X = rng.standard_normal((N, 5)) * 3
y = rng.integers(0, 4, size=N).astype(float)
o = make_oracle("tree", X, y, ptr, C=0.3, loss="logistic")
assert o._fused
w = rng.standard_normal(5) * 0.7
o.fun(w)  # the fused kernels compile first
o.grad(w)
o.hess_vec(rng.standard_normal(5))
n, k = 3000, 4
zs = np.sort(rng.standard_normal(n) * 3)
rs = rng.integers(0, k, n).astype(np.int64)
bad = 0
for f in (tree_fun_ascending, tree_fun_descending):
    outs = []
    for fn in (f, f.py_func):
        gs = np.zeros(n)
        hs = np.zeros(n)
        v = fn(n, k, zs, rs, 0.7, 1.3, 2, gs, hs, np.empty(FW_LANES * (k + 1)), np.zeros(n, np.int32))
        outs.append((v, gs, hs))
    (v1, g1, h1), (v2, g2, h2) = outs
    bad += not (v1 == v2 and np.array_equal(g1, g2) and np.array_equal(h1, h2))
print("differ", bad)
