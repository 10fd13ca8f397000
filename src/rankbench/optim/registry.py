"""Optimizer registry: what each RankSVM optimizer needs and promises, and the solvers it makes.

An optimizer is a function ``f(oracle, *, tol, max_iter, ..., keep_coef, verbose) -> OptimResult``
in its own module of ``rankbench.optim``, decorated with ``@register_optimizer``: its name, the
oracle methods it calls (``needs``, from ``ORACLE_METHODS``, as skglm's
``_datafit_required_attr``), its stopping rule in one line, the paper it comes from, and the loss
it is made for.  Its default ``tol`` and ``max_iter`` are the function's own keyword defaults
(one copy).  Modules are found by import, so a new optimizer is one new file.

Every optimizer x oracle pair is the solver ``<optimizer>_<oracle>`` (``ranksvm_solvers``), plus
the papers' names in ``ALIASES``.  ``check_pairing`` refuses, before any data is read, a
combination whose oracle cannot evaluate the loss or cannot give what the optimizer calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rankbench.plugins import import_submodules

# what an optimizer may ask of an oracle: f, a subgradient, a true gradient (C^1 loss),
# Hessian-vector products and the Hessian diagonal (loss with a generalized Hessian)
ORACLE_METHODS = ("fun", "subgrad", "grad", "hess_vec", "hess_diag")

# the papers' and the configs' historical names for some pairings
ALIASES: dict[str, tuple[str, str]] = {
    "prsvm": ("newton", "pairs"),  # Chapelle & Keerthi sect. 3
    "prsvm_plus": ("newton", "counting"),  # Chapelle & Keerthi sect. 4
    "cutting_plane": ("cutting_plane", "counting"),
    "sgd_queries": ("sgd_queries", "counting"),  # Chapelle & Keerthi Alg. 3
}


@dataclass(frozen=True)
class Optimizer:
    """A registered optimizer: ``function`` and what it declares (see the module docstring)."""

    name: str
    function: Callable
    needs: frozenset[str]
    stopping_rule: str
    paper: str
    default_loss: str = "squared_hinge"
    losses: frozenset[str] | None = None  # the only losses it takes (None: any the oracle gives)

    def _default(self, key: str):
        p = inspect.signature(self.function).parameters.get(key)
        return None if p is None else p.default

    @property
    def tol(self) -> float | None:
        """Default tolerance of the stopping rule (None: the optimizer takes no tolerance)."""
        return self._default("tol")

    @property
    def max_iter(self) -> int | None:
        """Default iteration cap (None: the optimizer derives it from the data)."""
        return self._default("max_iter")

    @property
    def parameters(self) -> frozenset[str]:
        """Keyword parameters the function accepts."""
        return frozenset(inspect.signature(self.function).parameters)


_OPTIMIZERS: dict[str, Optimizer] = {}


def register_optimizer(name: str, *, needs: tuple[str, ...], stopping_rule: str, paper: str,
                       default_loss: str = "squared_hinge",
                       losses: tuple[str, ...] | None = None) -> Callable[[Callable], Callable]:
    """Decorator: register an optimizer function under ``name`` with what it declares."""
    bad = set(needs) - set(ORACLE_METHODS)
    if bad:
        raise ValueError(f"optimizer {name!r}: unknown oracle methods {sorted(bad)}; expected "
                         f"some of {ORACLE_METHODS}")

    def deco(function: Callable) -> Callable:
        spec = Optimizer(name, function, frozenset(needs), stopping_rule, paper, default_loss,
                         None if losses is None else frozenset(losses))
        old = _OPTIMIZERS.get(name)
        if old is not None and (old.function.__module__, old.function.__qualname__) != (
                function.__module__, function.__qualname__):
            raise ValueError(f"optimizer {name!r} registered twice")
        _OPTIMIZERS[name] = spec
        return function

    return deco


def optimizers() -> dict[str, Optimizer]:
    """Every registered optimizer by name (the modules of rankbench.optim imported first)."""
    import_submodules("rankbench.optim")
    return dict(_OPTIMIZERS)


def get_optimizer(name: str) -> Optimizer:
    """The optimizer registered as ``name``; ValueError naming the known ones."""
    known = optimizers()
    if name not in known:
        raise ValueError(f"unknown optimizer {name!r}; registered: {', '.join(sorted(known))}")
    return known[name]


def ranksvm_solvers() -> dict[str, tuple[str, str]]:
    """Solver name -> (optimizer, oracle): every pairing as ``<optimizer>_<oracle>``, and ALIASES."""
    from rankbench.objective import ORACLES

    names = {f"{opt}_{oracle}": (opt, oracle) for opt in sorted(optimizers()) for oracle in ORACLES}
    return {**names, **ALIASES}


def resolve_solver(solver: str) -> tuple[Optimizer, str]:
    """(optimizer, oracle name) of a RankSVM solver name; ValueError naming the valid names."""
    solvers = ranksvm_solvers()
    if not isinstance(solver, str) or solver not in solvers:
        from rankbench.objective import ORACLES

        raise ValueError(f"unknown RankSVM solver {solver!r}; use <optimizer>_<oracle> with optimizer "
                         f"in {', '.join(sorted(optimizers()))} and oracle in {', '.join(ORACLES)}, "
                         f"or one of {', '.join(ALIASES)}")
    opt, oracle = solvers[solver]
    return get_optimizer(opt), oracle


def check_pairing(optimizer: Optimizer, oracle: str, loss):
    """The loss form ``oracle`` evaluates for ``loss`` (itself or its piecewise approximation);
    ValueError when the oracle cannot evaluate the loss or lacks a method the optimizer calls,
    naming the oracles / optimizers that would work."""
    from rankbench.objective import ORACLES, get_loss

    loss = get_loss(loss)
    form = ORACLES[oracle].loss_form(loss)  # raises, naming the oracles that take this loss
    missing = optimizer.needs - ORACLES[oracle].methods(loss)
    able = [name for name, o in optimizers().items() if o.needs <= ORACLES[oracle].methods(loss)
            and (o.losses is None or loss.name in o.losses)]
    if optimizer.losses is not None and loss.name not in optimizer.losses:
        raise ValueError(f"optimizer {optimizer.name!r} takes the losses "
                         f"{', '.join(sorted(optimizer.losses))}, not {loss.name}; optimizers for "
                         f"this loss on the {oracle} oracle: {', '.join(able) or '(none)'}")
    if missing:
        why = "has no Hessian" if {"hess_vec", "hess_diag"} & missing else "is not differentiable"
        raise ValueError(f"optimizer {optimizer.name!r} needs {', '.join(sorted(missing))} from the "
                         f"oracle, and the {loss.name} loss {why}; optimizers for this loss on the "
                         f"{oracle} oracle: {', '.join(able) or '(none)'}")
    return form


def register_hydra_solver_configs(conf_dir: str | Path) -> Path:
    """Put a node in Hydra's ConfigStore (group "solver") for every RankSVM solver that has no
    ``conf_dir/solver/<name>.yaml``, built from ``solver/base/ranksvm.yaml`` with its name and
    its optimizer's loss; returns ``conf_dir`` (Hydra's config directory)."""
    conf_dir = Path(conf_dir)
    base_file = conf_dir / "solver" / "base" / "ranksvm.yaml"
    if not base_file.is_file():
        return conf_dir
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    base = OmegaConf.load(base_file)
    store = ConfigStore.instance()
    for name, (opt, _) in ranksvm_solvers().items():
        # a node named like a YAML file would be merged into it as a schema: skip those
        if not (conf_dir / "solver" / f"{name}.yaml").exists():
            node = OmegaConf.merge(base, {"name": name, "loss": get_optimizer(opt).default_loss})
            store.store(group="solver", name=name, node=node)
    return conf_dir
