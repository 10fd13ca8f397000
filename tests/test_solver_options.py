"""Options that mean something (issue 22): an optimizer's tuning options are one
``solver_options`` mapping validated against what the optimizer declares; an option that does
not apply to the chosen solver is an error naming the optimizers that take it, never dropped."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest

from rankbench import RankSVM
from rankbench.estimators.ranksvm import split_params
from rankbench.estimators.registry import make_solver
from rankbench.objective import ORACLES
from rankbench.optim.registry import OPTIMIZERS, STANDARD_PARAMETERS, optimizers


def _problem():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int) + (X[:, 1] > 1)
    return X, y, np.repeat(np.arange(4), 10)


def _solver_for(opt) -> str:
    """A solver of ``opt`` on an oracle that evaluates its default loss."""
    oracle = "tree" if "tree" in ORACLES else next(iter(ORACLES))
    return f"{opt.name}_{oracle}"


def test_eta0_on_tron_names_the_solvers_that_take_it():
    with pytest.raises(TypeError) as err:
        RankSVM(solver="tron_tree", eta0=0.5)
    msg = str(err.value)
    assert "'eta0' does not apply to solver 'tron_tree'" in msg
    assert "sgd_queries" in msg and "sgd_queries_<oracle>" in msg
    with pytest.raises(ValueError, match=r"solver_options \['eta0'\] do not apply to optimizer "
                                         r"'tron'.*'eta0' is an option of sgd_queries"):
        RankSVM(solver="tron_tree", solver_options={"eta0": 0.5}).check_params()
    # the option of the solver's own optimizer: where it goes
    with pytest.raises(TypeError, match=r"pass solver_options=\{'eta0': 0.5\}"):
        RankSVM(solver="sgd_queries", eta0=0.5)
    with pytest.raises(TypeError, match=r"no parameter 'Cc' \(did you mean 'C'\?\)"):
        RankSVM(Cc=1.0)


def test_ranksvm_keeps_about_fourteen_parameters():
    deprecated = {"kernel", "n_components", "gamma"}  # FutureWarning: Pipeline(KernelMap, RankSVM)
    params = set(RankSVM().get_params()) - deprecated
    assert len(params) == 14, sorted(params)
    assert "solver_options" in params


def test_every_declared_option_is_checked_and_reaches_its_optimizer(monkeypatch):
    X, y, qid = _problem()
    opts = optimizers()
    assert {"newton", "tron", "lbfgs", "sgd_queries", "sgd_pairs", "cutting_plane"} <= set(opts)
    declared = {name: o.options for name, o in opts.items()}
    # nothing standard (start, tol, what is recorded, the seed, the path's policy) is an option
    assert not any(STANDARD_PARAMETERS & set(d) for d in declared.values())
    assert {"max_cg_iter", "precondition", "confirm_rtol"} <= set(declared["newton"])
    assert {"max_cg_iter", "cg_rtol", "precond_mix", "cg_history"} <= set(declared["tron"])
    assert {"eta0", "average", "step"} <= set(declared["sgd_queries"])
    for name, opt in opts.items():
        solver = _solver_for(opt)
        for option, default in opt.options.items():
            # its own optimizer takes it: it reaches the function with the value given
            seen = {}

            @functools.wraps(opt.function)
            def spy(oracle, _f=opt.function, _seen=seen, **kw):
                _seen.update(kw)
                return _f(oracle, **kw)

            monkeypatch.setitem(OPTIMIZERS._items, name, replace(opt, function=spy))
            m = RankSVM(solver=solver, loss=opt.default_loss, max_iter=3,
                        solver_options={option: default})
            m.check_params()
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # 3 iterations: not converged, on purpose
                m.fit(X, y, qid)
            assert option in seen and seen[option] == default, (name, option)
            monkeypatch.setitem(OPTIMIZERS._items, name, opt)
            # any other optimizer refuses it, naming those that take it
            for other in opts.values():
                if option in other.options:
                    continue
                with pytest.raises(ValueError, match=f"'{option}' is an option of .*{name}"):
                    RankSVM(solver=_solver_for(other), loss=other.default_loss,
                            solver_options={option: default}).check_params()


def test_configs_spell_options_flat_and_run_ids_keep_that_spelling():
    from rankbench.spec import RunSpec

    est, options = split_params({"C": 1.0, "cg_history": True, "max_cg_iter": None})
    assert est == {"C": 1.0} and options == {"cg_history": True}
    base = {"experiment": "t", "dataset": "synthetic", "fold": 1, "solver": "tron_tree"}
    flat = RunSpec.from_dict({**base, "params": {"C": 1.0, "cg_history": True}})
    nested = RunSpec.from_dict({**base, "params": {"C": 1.0, "solver_options": {"cg_history": True}}})
    assert flat.run_id == nested.run_id and flat.params == {"C": 1.0, "cg_history": True}
    with pytest.raises(ValueError, match="'eta0' is an option of sgd_queries"):
        make_solver("tron_tree", {"eta0": 0.5})
    with pytest.raises(ValueError, match=r"unknown RankSVM parameter\(s\) 'tool' \(did you mean 'tol'\?\)"):
        make_solver("prsvm_plus", {"tool": 1e-3})
