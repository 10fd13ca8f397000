"""``rankbench.estimators.base.EstimatorBase``: scikit-learn's estimator protocol without importing
scikit-learn at import time, checked against scikit-learn's own ``BaseEstimator`` (a twin class
with the same ``__init__``), its clone / Pipeline / pickling / metadata routing, and the
exception classes it raises."""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_html_repr
from sklearn.utils._metadata_requests import SIMPLE_METHODS, _MetadataRequester

import rankbench
from rankbench.objective import LOSSES

NAMES = ["RankSVM", "SPDRanker", "AUCSVM", "LambdaMART", "LightGBMLambdaRank", "XGBoostRanker"]


def _twin(cls):
    """A scikit-learn BaseEstimator with cls's name and constructor: the reference behaviour."""
    return type(cls.__name__, (BaseEstimator,), {"__init__": cls.__init__})


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 1)
    return X, y, np.repeat(np.arange(8), 15)


REPR_CASES = [
    {},
    {"C": 0.1},
    {"C": 0.1, "solver": "tron_tree", "loss": "hinge", "tol": 1e-3, "max_iter": 5, "kernel": "rbf",
     "gamma": 0.5, "n_components": 100, "solver_options": {"max_cg_iter": 30}, "random_state": 7},
    {"delta": np.arange(400.0).reshape(20, 20)},  # multi-line value
    {"delta": "x" * 1000},  # beyond N_CHAR_MAX: the middle becomes "..."
    {"loss": LOSSES["huber"]},  # a dataclass, pretty-printed under its column
    {"C": float("nan")},
    {"delta": [[0, 1], [2, 3]], "solver": "newton_pairs", "rescaling": "margin"},
]


@pytest.mark.parametrize("changed_only", [True, False])
def test_repr_is_scikit_learns(changed_only):
    cls = rankbench.RankSVM
    with sklearn.config_context(print_changed_only=changed_only):
        for params in REPR_CASES:
            assert repr(cls(**params)) == repr(_twin(cls)(**params)), params
        for name in NAMES:
            other = getattr(rankbench, name)
            assert repr(other()) == repr(_twin(other)())
            # every numeric parameter changed: a long, wrapped repr
            changed = {k: 2 * v + 1 for k, v in other().get_params().items()
                       if isinstance(v, int | float) and not isinstance(v, bool)}
            assert changed
            assert repr(other(**changed)) == repr(_twin(other)(**changed)), name


def test_get_params_and_set_params_are_scikit_learns():
    cls = rankbench.RankSVM
    # a parameter holding an estimator: deep params and nested set_params
    ours, ref = cls(C=2.0, delta=StandardScaler()), _twin(cls)(C=2.0, delta=StandardScaler())
    assert ours.get_params(deep=True).keys() == ref.get_params(deep=True).keys()
    assert "delta__with_mean" in ours.get_params(deep=True)
    assert ours._get_param_names() == ref._get_param_names()
    assert ours.set_params(C=3.0, delta__with_mean=False) is ours
    ref.set_params(C=3.0, delta__with_mean=False)
    assert repr(ours) == repr(ref)
    with pytest.raises(ValueError) as ours_err:
        cls().set_params(nope=1)
    with pytest.raises(ValueError) as ref_err:
        _twin(cls)().set_params(nope=1)
    assert str(ours_err.value) == str(ref_err.value)
    for name in NAMES:
        other = getattr(rankbench, name)
        assert other().get_params() == _twin(other)().get_params()


def test_clone_pipeline_and_pickle():
    X, y, qid = _problem()
    fitted = rankbench.RankSVM(C=0.5).fit(X, y, qid)
    c = clone(fitted)
    assert c is not fitted and c.get_params() == fitted.get_params() and not hasattr(c, "coef_")
    # a Pipeline routes ranksvm__qid to the step and scores with it
    pipe = make_pipeline(StandardScaler(), rankbench.RankSVM(C=0.1)).fit(X, y, ranksvm__qid=qid)
    direct = rankbench.RankSVM(C=0.1).fit(StandardScaler().fit_transform(X), y, qid)
    np.testing.assert_array_equal(pipe[-1].coef_, direct.coef_)
    assert repr(pipe).endswith("('ranksvm', RankSVM(C=0.1))])")
    html = estimator_html_repr(pipe)
    assert "RankSVM" in html and "StandardScaler" in html
    assert set(rankbench.RankSVM()._repr_mimebundle_()) == {"text/plain", "text/html"}
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.decision_function(X), fitted.decision_function(X))


@pytest.mark.parametrize("name", NAMES)
def test_set_request_methods_and_routing_are_scikit_learns(name):
    cls = getattr(rankbench, name)
    for method in SIMPLE_METHODS:
        # scikit-learn's own rule, run on our class, says which set_<method>_request exist
        wanted = _MetadataRequester._get_class_level_metadata_request_values.__func__(cls, method)
        assert hasattr(cls, f"set_{method}_request") == bool(wanted), method
        if wanted:
            signature = inspect.signature(getattr(cls(), f"set_{method}_request"))
            assert sorted(set(signature.parameters) - {"self"}) == sorted(wanted)
    with pytest.raises(RuntimeError, match="only available when metadata routing is enabled"):
        cls().set_fit_request(qid=True)
    with sklearn.config_context(enable_metadata_routing=True):
        est = cls().set_score_request(qid=False)
        routing = est.get_metadata_routing()
        assert routing.fit.requests["qid"] is True and routing.score.requests["qid"] is False
        assert routing.score.requests["group"] is True
        with pytest.raises(TypeError, match="Unexpected args"):
            cls().set_fit_request(nope=True)
        assert clone(est).get_metadata_routing().score.requests["qid"] is False


def test_errors_and_warnings_are_scikit_learns_classes():
    X, y, qid = _problem()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        rankbench.RankSVM().decision_function(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = rankbench.RankSVM(solver="tron_counting", C=100.0, max_iter=1).fit(X * 100, y, qid)
    assert not m.converged_
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert m.__sklearn_tags__().input_tags.sparse and m.__sklearn_tags__().target_tags.required


def test_kernel_map_still_importable_from_ranksvm():
    from rankbench.estimators.kernel_map import KernelMap
    from rankbench.estimators.ranksvm import KernelMap as Old

    assert Old is KernelMap is rankbench.KernelMap
    assert isinstance(KernelMap(), BaseEstimator)  # a scikit-learn transformer, as before
