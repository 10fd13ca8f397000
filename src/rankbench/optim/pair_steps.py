"""One stochastic step of each SPD learner on a pair x = a - b, y = sign(y_a - y_b).

Sculley (2009) sect. 3.2 and Chapelle & Keerthi (2010) Alg. 2, for the problem
``lambda/2 ||w||^2 + sum_P pi(p) loss_p(w)`` (pi given by the sampler, see samplers.py).
Every learner's step has the form ``w <- c w + d x`` followed, for some, by a
projection onto an L2 ball; ``learner_coefficients`` gives (c, d) and the kernels
apply them.

The weight vector is kept as ``w = scale * v`` with ``||v||^2`` tracked, so the
shrink ``c w`` and the projection are O(1) and a step costs O(nnz(a) + nnz(b)) on
CSR data (O(d) on dense).  The kernels carry ``scale`` and ``vsq = ||v||^2`` as
scalars (in registers) and return them.

Conventions (checked against sofia-ml where the paper is terse):

- ``eta_t = 1 / (lambda t)`` with t = 1, 2, ... (Pegasos schedule); the hinge test
  uses the margin of w *before* the shrink; the shrink factor at t = 1 is exactly 0
  (sofia-ml clamps it to 1e-7; w is 0 at t = 1 either way).
- Pegasos projects onto the ball of radius 1/sqrt(lambda) after every step.
- PA-I: ``tau = min(C, hinge / ||x||^2)``, no shrink and no projection (the paper's
  rule; sofia-ml additionally projects onto the Pegasos ball when lambda > 0).
  A pair with x = 0 (duplicate feature vectors with different labels) is skipped.
- ROMMA (aggressive: updates whenever the hinge loss is positive), Li & Long's
  ``c = (|x|^2 |w|^2 - y <x,w>) / (|x|^2 |w|^2 - <x,w>^2)``,
  ``d = |w|^2 (y - <x,w>) / (|x|^2 |w|^2 - <x,w>^2)``.  From w = 0 the formula is
  0/0; the first step is the minimum-norm w with y <w,x> = 1, i.e. ``d = y/|x|^2``
  (sofia-ml's epsilon-regularised formula gives d = 1 there regardless of y).  When
  x is parallel to w (denominator <= 1e-12 |x|^2 |w|^2) or c <= 0 the step is skipped.
- Step sizes (sofia-ml's ``--eta_type``, GetEta): ``pegasos`` eta_t = 1/(lambda t) (the
  default, above), ``basic`` eta_t = c/(c + t) (sofia-ml hard-codes c = 10), ``constant``
  eta_t = c (sofia-ml: 0.02); and ``inverse`` eta_t = c/t (Chapelle Alg. 2's literal rate
  with c = C, see sgd_pairs.py).  They apply to sgd_svm, pegasos, sgd_squared_hinge and the
  perceptrons.  The shrink 1 - eta lambda is clamped below at sofia-ml's
  MIN_SCALING_FACTOR 1e-7 (it can be <= 0 under ``basic`` / ``constant``).
- perceptron / margin_perceptron (Sculley sect. 3.4; sofia-ml's margin-perceptron,
  SingleMarginPerceptronRankStep): ``w <- w + eta_t y x`` when ``y <w, x> <= margin``
  (margin C; 0 for the perceptron), no shrink, no projection.  sofia-ml's rank step adds
  ``eta (a - b)`` without the factor y, which is the same step when a is the preferred
  document and the wrong direction otherwise (its rank loops draw either orientation);
  we apply ``eta y (a - b)``.
- sgd_squared_hinge (Chapelle Alg. 2 with l(t) = max(0, 1 - t)^2): gradient step
  ``w <- (1 - eta lambda) w + eta 2 max(0, 1 - y<w,x>) y x`` with eta = 1/(lambda t).
  Chapelle writes the step as (1/t) times the gradient of
  ``l_ij = ||w||^2/(2|P|) + C l``; since ``l_ij`` is ``1/(lambda |P|)`` times our
  per-pair term, that literal rate is |P| times smaller than the 1/(mu t) rate for
  the strong convexity mu of eq. (1); we use the latter, which is the Pegasos
  schedule.  Iterates are projected onto the ball of radius sqrt(2/lambda), which
  holds the optimum (lambda/2 |w*|^2 <= F(w*) <= F(0) = 1) and keeps the early large
  steps of the unbounded squared-hinge gradient from blowing up.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SGD_SVM = 0
PEGASOS = 1
PA1 = 2
ROMMA = 3
SGD_SQUARED_HINGE = 4
PERCEPTRON = 5
MARGIN_PERCEPTRON = 6

LEARNERS = {"sgd_svm": SGD_SVM, "pegasos": PEGASOS, "pa1": PA1, "romma": ROMMA,
            "sgd_squared_hinge": SGD_SQUARED_HINGE, "perceptron": PERCEPTRON,
            "margin_perceptron": MARGIN_PERCEPTRON}

# Step-size schedules (sofia-ml's --eta_type): eta_t for the 1-based step t.
ETA_PEGASOS = 0   # 1 / (lambda t)
ETA_BASIC = 1     # c / (c + t)   (sofia-ml: c = 10)
ETA_CONSTANT = 2  # c             (sofia-ml: c = 0.02)
ETA_INVERSE = 3   # c / t         (Chapelle Alg. 2 literally, with c = C: see optim/sgd_pairs.py)
ETA_SCHEDULES = {"pegasos": ETA_PEGASOS, "basic": ETA_BASIC, "constant": ETA_CONSTANT,
                 "inverse": ETA_INVERSE}
ETA_DEFAULT_C = {"pegasos": None, "basic": 10.0, "constant": 0.02, "inverse": 1.0}
# The learners whose step reads eta_t (PA-I and ROMMA choose their own step length).
ETA_LEARNERS = ("sgd_svm", "pegasos", "sgd_squared_hinge", "perceptron", "margin_perceptron")

# sofia-ml's MIN_SCALING_FACTOR: the shrink 1 - eta lambda is clamped to at least this.
_MIN_SCALING = 1e-7

# The dense step's fastmath flags; the SPD kernel that IR-inlines it compiles under the same
# ones (an inlined body takes its caller's flags), so a kernel run and the step called alone
# vectorise their loops alike.
STEP_FASTMATH = {"reassoc", "nsz"}

# Keep scale within these bounds so v neither under- nor overflows over 1e8+ steps.
_SCALE_LO = 1e-8
_SCALE_HI = 1e8


@njit(cache=True, inline="always")
def needs_squared_norm(learner):
    """True for the learners whose step uses ||x||^2 (PA-I, ROMMA)."""
    return learner == PA1 or learner == ROMMA


@njit(cache=True, inline="always")
def step_size(eta_mode, eta_c, lam, t):
    """eta_t of the schedule ``eta_mode`` at 1-based step t (sofia-ml's GetEta)."""
    if eta_mode == ETA_PEGASOS:
        return 1.0 / (lam * t)
    if eta_mode == ETA_BASIC:
        return eta_c / (eta_c + t)
    if eta_mode == ETA_INVERSE:
        return eta_c / t
    return eta_c


@njit(cache=True, inline="always")
def _shrink_factor(eta, lam):
    # sofia-ml's L2Regularize: 1 - eta lambda, clamped below at MIN_SCALING_FACTOR; the
    # Pegasos schedule's exact 0 at t = 1 (where w = 0) is kept as 0.
    c = 1.0 - eta * lam
    if c < _MIN_SCALING and c != 0.0:
        c = _MIN_SCALING
    return c


# STEP_FASTMATH stated: the dense kernel (STEP_FASTMATH) and the sparse one (strict) both call
# it, and a flag left unset would be inherited from whichever compiled it first
@njit(cache=True, fastmath=STEP_FASTMATH)
def learner_coefficients(learner, yab, wx, xx, wsq, t, lam, C, eta_mode=ETA_PEGASOS,
                         eta_c=10.0):
    """(c, d) of the step ``w <- c w + d x`` for margin ``yab * wx``; O(1).

    ``wx = <w, x>``, ``xx = ||x||^2`` (only read by PA-I and ROMMA, and only when the
    hinge loss is positive), ``wsq = ||w||^2``, ``t`` the 1-based step number, ``C`` the
    learner's constant (PA-I's aggressiveness, the perceptrons' margin), ``eta_mode`` /
    ``eta_c`` the step-size schedule (ETA_SCHEDULES).
    """
    margin = yab * wx
    if learner == SGD_SVM or learner == PEGASOS:
        eta = step_size(eta_mode, eta_c, lam, t)
        c = _shrink_factor(eta, lam)
        d = eta * yab if margin < 1.0 else 0.0
        return c, d
    if learner == SGD_SQUARED_HINGE:
        eta = step_size(eta_mode, eta_c, lam, t)
        c = _shrink_factor(eta, lam)
        d = eta * 2.0 * (1.0 - margin) * yab if margin < 1.0 else 0.0
        return c, d
    if learner == PERCEPTRON or learner == MARGIN_PERCEPTRON:
        # sofia-ml SingleMarginPerceptronRankStep: no shrink, no projection; update when
        # y <w, x> <= margin (C for the margin perceptron; 0 for the plain perceptron).
        if margin <= (C if learner == MARGIN_PERCEPTRON else 0.0):
            return 1.0, step_size(eta_mode, eta_c, lam, t) * yab
        return 1.0, 0.0
    if learner == PA1:
        if margin < 1.0 and xx > 0.0:
            tau = (1.0 - margin) / xx
            if tau > C:
                tau = C
            return 1.0, tau * yab
        return 1.0, 0.0
    # ROMMA
    if margin < 1.0 and xx > 0.0:
        if wsq == 0.0:
            return 1.0, yab / xx
        den = xx * wsq - wx * wx
        if den <= 1e-12 * xx * wsq:
            return 1.0, 0.0
        c = (xx * wsq - yab * wx) / den
        if c <= 0.0:
            return 1.0, 0.0
        return c, wsq * (yab - wx) / den
    return 1.0, 0.0


@njit(cache=True, inline="always")
def projection_radius_sq(learner, lam, eta_mode=ETA_PEGASOS):
    """Squared radius of the ball the learner projects onto (inf: no projection).

    sgd_squared_hinge projects only under the Pegasos schedule, whose first steps are
    large; its other schedules (e.g. Chapelle Alg. 2's literal one) are not projected.
    """
    if learner == PEGASOS:
        return 1.0 / lam
    if learner == SGD_SQUARED_HINGE and eta_mode == ETA_PEGASOS:
        return 2.0 / lam
    return np.inf


@njit(cache=True, inline="always")
def _shrink(c, v, scale, vsq):
    if c == 0.0:
        v[:] = 0.0
        return 1.0, 0.0
    return scale * c, vsq


@njit(cache=True, inline="always")
def _project_and_rescale(learner, lam, eta_mode, v, scale, vsq):
    r2 = projection_radius_sq(learner, lam, eta_mode)
    wsq = scale * scale * vsq
    if wsq > r2:
        scale *= np.sqrt(r2 / wsq)
    if scale < _SCALE_LO or scale > _SCALE_HI:
        acc = 0.0
        for j in range(v.shape[0]):
            v[j] *= scale
            acc += v[j] * v[j]
        return 1.0, acc
    return scale, vsq


@intrinsic
def _prefetch(typingctx, X, i, j):
    """LLVM's prefetch hint (read, keep in all cache levels) for the address of X[i, j].

    A hint only: it never faults and changes no value (x86 ``prefetcht0``).
    """
    sig = types.void(X, i, j)

    def codegen(context, builder, signature, args):
        xt = signature.args[0]
        ary = context.make_array(xt)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, xt, ary, [args[1], args[2]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def prefetch_row(X, a):
    """Prefetch every cache line of row a of dense C-contiguous X (float64: 8 per line)."""
    d = X.shape[1]
    for j in range(0, d, 8):
        _prefetch(X, a, j)
    if d > 0:
        _prefetch(X, a, d - 1)


@njit(cache=True, inline="always", fastmath=STEP_FASTMATH)
def pair_step_dense(X, a, b, yab, t, learner, lam, C, eta_mode, eta_c, v, scale, vsq):
    """One learner step on rows a, b of dense X; O(d).

    Returns ``(scale, vsq, added)`` with ``added`` True when x entered w.

    Inlined at numba-IR level into the SPD kernel, which is compiled without the
    runtime's reference counting (``_nrt=False``, see spd.py) and with the same fastmath
    flags, so a step costs no call and no incref/decref of X and v.  (LLVM did not
    inline it as a separate function: each step paid a call with 18 arguments and,
    inside it, an atomic incref/decref of X and of v.)  Called from Python it is an
    ordinary compiled function with these flags.  Reassociation lets LLVM vectorise the
    three O(d) loops (<v, x>, ||x||^2, the axpy with its ||v||^2); the summation order
    is fixed at compile time, so runs stay bit-identical on one machine.  Rows are
    indexed in place.
    """
    n_feat = X.shape[1]
    acc = 0.0
    for j in range(n_feat):
        acc += v[j] * (X[a, j] - X[b, j])
    wx = scale * acc
    xx = 0.0
    if needs_squared_norm(learner) and yab * wx < 1.0:
        for j in range(n_feat):
            e = X[a, j] - X[b, j]
            xx += e * e
    fast = (learner == PEGASOS or learner == SGD_SVM) and eta_mode == ETA_PEGASOS
    if fast:
        # learner_coefficients' values for these two, spelt out (the hot path of the
        # benchmarks; the generic dispatch costs ~7 ns a step): eta = 1/(lambda t), shrink
        # 1 - eta lambda (exactly 0 at t = 1, >= 1/2 after: never clamped).  The step's
        # v-coefficient +-eta / scale' does not wait for <v, x>: (+-eta) / s == +-(eta / s)
        # exactly, so dividing before the margin test gives the same bits one division
        # latency sooner.
        eta = 1.0 / (lam * t)
        c = 1.0 - eta * lam
        eta_v = eta / (scale * c) if c != 0.0 else eta
        d = eta * yab if yab * wx < 1.0 else 0.0
    else:
        eta_v = 0.0
        c, d = learner_coefficients(learner, yab, wx, xx, scale * scale * vsq, t, lam, C,
                                    eta_mode, eta_c)
    if c == 0.0:  # the Pegasos shrink at t = 1: w = 0
        for j in range(n_feat):
            v[j] = 0.0
        scale = 1.0
        vsq = 0.0
    else:
        scale = scale * c
    if d != 0.0:
        # ||v||^2 is recomputed exactly here: same O(d) pass, no drift on dense data.
        coef = yab * eta_v if fast else d / scale
        s = 0.0
        for j in range(n_feat):
            nv = v[j] + coef * (X[a, j] - X[b, j])
            v[j] = nv
            s += nv * nv
        vsq = s
    r2 = projection_radius_sq(learner, lam, eta_mode)
    wsq = scale * scale * vsq
    if wsq > r2:
        scale *= np.sqrt(r2 / wsq)
    if scale < _SCALE_LO or scale > _SCALE_HI:
        s = 0.0
        for j in range(n_feat):
            nv = v[j] * scale
            v[j] = nv
            s += nv * nv
        scale = 1.0
        vsq = s
    return scale, vsq, d != 0.0


@njit(cache=True, inline="always")
def _sparse_dot(v, data, indices, start, end):
    acc = 0.0
    for k in range(start, end):
        acc += v[indices[k]] * data[k]
    return acc


@njit(cache=True)
def sparse_diff_sqnorm(data, indices, indptr, a, b):
    """||x_a - x_b||^2 for CSR rows with sorted indices; O(nnz(a) + nnz(b))."""
    i = indptr[a]
    ie = indptr[a + 1]
    j = indptr[b]
    je = indptr[b + 1]
    acc = 0.0
    while i < ie or j < je:
        if j >= je or (i < ie and indices[i] < indices[j]):
            acc += data[i] * data[i]
            i += 1
        elif i >= ie or indices[j] < indices[i]:
            acc += data[j] * data[j]
            j += 1
        else:
            diff = data[i] - data[j]
            acc += diff * diff
            i += 1
            j += 1
    return acc


@njit(cache=True, inline="always")
def _sparse_axpy(coef, data, indices, start, end, v, vsq):
    for k in range(start, end):
        j = indices[k]
        old = v[j]
        new = old + coef * data[k]
        v[j] = new
        vsq += new * new - old * old
    return vsq if vsq > 0.0 else 0.0


@njit(cache=True, inline="always")
def pair_step_sparse(data, indices, indptr, a, b, yab, t, learner, lam, C, eta_mode, eta_c, v,
                     scale, vsq):
    """One learner step on CSR rows a, b; O(nnz(a) + nnz(b)).

    Returns ``(scale, vsq, added)``; ``vsq`` is updated incrementally.
    """
    sa = indptr[a]
    ea = indptr[a + 1]
    sb = indptr[b]
    eb = indptr[b + 1]
    wx = scale * (_sparse_dot(v, data, indices, sa, ea) - _sparse_dot(v, data, indices, sb, eb))
    xx = 0.0
    if needs_squared_norm(learner) and yab * wx < 1.0:
        xx = sparse_diff_sqnorm(data, indices, indptr, a, b)
    c, d = learner_coefficients(learner, yab, wx, xx, scale * scale * vsq, t, lam, C, eta_mode,
                                eta_c)
    scale, vsq = _shrink(c, v, scale, vsq)
    if d != 0.0:
        coef = d / scale
        vsq = _sparse_axpy(coef, data, indices, sa, ea, v, vsq)
        vsq = _sparse_axpy(-coef, data, indices, sb, eb, v, vsq)
    scale, vsq = _project_and_rescale(learner, lam, eta_mode, v, scale, vsq)
    return scale, vsq, d != 0.0
