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
from functools import cached_property

from rankbench.plugins import Registry

# what an optimizer may ask of an oracle: f, a subgradient, a true gradient (C^1 loss),
# Hessian-vector products and the Hessian diagonal (loss with a generalized Hessian)
ORACLE_METHODS = ("fun", "subgrad", "grad", "hess_vec", "hess_diag")
# keyword parameters every optimizer may take that are not tuning options: the start, the
# stopping rule, what is recorded, the randomness (RankSVM's own parameters) and the warm-start
# policy a C path passes (rankbench.estimators.ranksvm.ranksvm_path)
STANDARD_PARAMETERS = frozenset({"oracle", "w0", "tol", "max_iter", "keep_coef", "verbose",
                                 "random_state", "warm"})

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

    @cached_property
    def _signature(self) -> inspect.Signature:
        """The function's signature, read once (a fit asks for defaults and parameters)."""
        return inspect.signature(self.function)

    def _default(self, key: str):
        p = self._signature.parameters.get(key)
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
        return frozenset(self._signature.parameters)

    @property
    def options(self) -> dict[str, object]:
        """Its tuning options (``RankSVM(solver_options=...)``), with their defaults: the
        function's keyword parameters beyond ``STANDARD_PARAMETERS``."""
        return {k: p.default for k, p in self._signature.parameters.items()
                if k not in STANDARD_PARAMETERS}


OPTIMIZERS: Registry[Optimizer] = Registry("optimizer", ("rankbench.optim",))


def register_optimizer(name: str, *, needs: tuple[str, ...], stopping_rule: str, paper: str,
                       default_loss: str = "squared_hinge",
                       losses: tuple[str, ...] | None = None) -> Callable[[Callable], Callable]:
    """Decorator: register an optimizer function under ``name`` with what it declares."""
    bad = set(needs) - set(ORACLE_METHODS)
    if bad:
        raise ValueError(f"optimizer {name!r}: unknown oracle methods {sorted(bad)}; expected "
                         f"some of {ORACLE_METHODS}")

    def deco(function: Callable) -> Callable:
        OPTIMIZERS.add(name, Optimizer(name, function, frozenset(needs), stopping_rule, paper,
                                       default_loss, None if losses is None else frozenset(losses)))
        return function

    return deco


def optimizers() -> dict[str, Optimizer]:
    """Every registered optimizer by name (the modules of rankbench.optim imported first)."""
    return OPTIMIZERS.items()


def get_optimizer(name: str) -> Optimizer:
    """The optimizer registered as ``name``; ValueError naming the known ones."""
    return OPTIMIZERS.get(name)


def option_owners(option: str) -> list[str]:
    """The optimizers that take the tuning option ``option``, sorted."""
    return sorted(n for n, o in optimizers().items() if option in o.options)


def check_solver_options(optimizer: Optimizer, options) -> dict[str, object]:
    """``options`` as a dict; ValueError naming each option the optimizer does not take and the
    optimizers (solvers ``<optimizer>_<oracle>``) that do take it."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError(f"solver_options must be a mapping of option -> value, got "
                         f"{type(options).__name__}")
    bad = sorted(k for k in options if k not in optimizer.options)
    if bad:
        where = "; ".join(f"{k!r} is an option of {', '.join(option_owners(k)) or 'no optimizer'}"
                          for k in bad)
        raise ValueError(f"solver_options {bad} do not apply to optimizer {optimizer.name!r} "
                         f"(its options: {', '.join(sorted(optimizer.options)) or 'none'}); {where}")
    return dict(options)


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
    able = sorted(name for name, o in optimizers().items() if o.needs <= ORACLES[oracle].methods(loss)
            and (o.losses is None or loss.name in o.losses))
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
