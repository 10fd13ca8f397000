"""One way to register a plug-in: a ``Registry`` filled by decorators in the modules of a package.

Losses, oracles, optimizers, estimators (solvers), datasets, metrics, renderers and bench
parts each have one ``Registry``.  A registry knows the packages whose modules register into
it and imports every module of them (not recursively, modules starting with ``_`` skipped)
the first time it is read, so a new plug-in is one new file: no hand-kept module list, no
second place to edit.  Names are unique: registering another object under a taken name is a
ValueError (re-registering the same function, e.g. after ``importlib.reload``, is allowed).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

_IMPORTED: set[str] = set()

T = TypeVar("T")


def import_submodules(package: str) -> None:
    """Import every module of ``package`` (not recursive) once; their import errors propagate."""
    if package in _IMPORTED:
        return
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    _IMPORTED.add(package)


def _same_object(a: Any, b: Any) -> bool:
    """Whether two registrations are one plug-in: the same object, equal objects, or the same
    function or class by qualified name (a module imported twice, e.g. reloaded)."""
    if a is b:
        return True
    try:
        if type(a) is type(b) and bool(a == b):
            return True
    except Exception:  # noqa: BLE001 - objects whose == is not a truth value (arrays)
        pass
    qa, qb = getattr(a, "__qualname__", None), getattr(b, "__qualname__", None)
    return isinstance(qa, str) and (a.__module__, qa) == (getattr(b, "__module__", None), qb)


def closest(name: str, known: list[str], n: int = 3) -> str:
    """' (did you mean X?)' for the closest names of ``known`` (case aside first), or ''."""
    name = str(name)
    same = [k for k in known if k.lower() == name.lower() and k != name]
    lower = {k.lower(): k for k in known}
    close = same or [lower[c] for c in difflib.get_close_matches(name.lower(), list(lower), n=n,
                                                                  cutoff=0.6)]
    return f" (did you mean {' or '.join(repr(c) for c in close[:n])}?)" if close else ""


class Registry(Generic[T]):
    """Name -> object, filled by ``@registry.register(name)`` in the modules of ``packages``."""

    def __init__(self, kind: str, packages: tuple[str, ...] = ()):
        self.kind = kind
        self.packages = tuple(packages)
        self._items: dict[str, T] = {}
        self._modules: dict[str, str] = {}

    def include(self, package: str) -> None:
        """Also import the modules of ``package`` on the next read (a layer above adding its own
        plug-ins, e.g. the harness's peer solvers)."""
        if package not in self.packages:
            self.packages = (*self.packages, package)

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator: register the object under ``name`` (default: its ``__name__``)."""

        def deco(obj: T) -> T:
            self.add(name if name is not None else obj.__name__, obj)
            return obj

        return deco

    def add(self, name: str, obj: T, module: str | None = None) -> T:
        """Register ``obj`` under ``name``; ValueError when another object holds the name.
        ``module``: the module that registers it (default: the object's own ``__module__``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} needs a non-empty string name, got {name!r}")
        old = self._items.get(name)
        if old is not None and not _same_object(old, obj):
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = obj
        self._modules[name] = module or getattr(obj, "__module__", "") or ""
        return obj

    def modules(self) -> list[str]:
        """The modules that registered the plug-ins read so far, sorted: what a fresh process
        (a worker, an isolated run) imports to know the same names."""
        return sorted(set(self._modules.values()) - {""})

    def _load(self) -> None:
        for package in self.packages:
            import_submodules(package)

    def items(self) -> dict[str, T]:
        """Every registered object by name (the packages' modules imported first)."""
        self._load()
        return dict(self._items)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self.items())

    def get(self, name: str) -> T:
        """The object registered as ``name``; ValueError naming the known ones and the closest."""
        items = self.items()
        if not isinstance(name, str) or name not in items:
            known = sorted(items)
            raise ValueError(f"unknown {self.kind} {name!r}{closest(name, known)}; known: "
                             f"{', '.join(known) or '(none)'}")
        return items[name]

    def __contains__(self, name: object) -> bool:
        return name in self.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.items())
