"""Shared fixtures: the benchmark data root (skip real-data tests with a reason when absent)."""

import os
from pathlib import Path

import pytest


def _data_root() -> Path | None:
    env = os.environ.get("RANKBENCH_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
    return here.resolve() if here.is_dir() else None


DATA_ROOT = _data_root()


def pytest_collection_modifyitems(session, config, items):
    """Files holding a test marked ``slow`` first, in collection order otherwise: ``make test``
    hands whole files to its workers in this order (pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``), so the files of a minute or two start at once instead of
    leaving one worker alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The benchmark data root; skips the test when it is not present."""
    if DATA_ROOT is None or not DATA_ROOT.is_dir():
        pytest.skip("real benchmark data not present: set RANKBENCH_DATA to a LETOR data root")
    return DATA_ROOT


def require_dataset(root: Path, sub: str) -> Path:
    """Skip unless ``root/sub`` exists (e.g. 'OHSUMED/QueryLevelNorm')."""
    p = root / sub
    if not p.exists():
        pytest.skip(f"{sub} not present under {root}")
    return p


@pytest.fixture(autouse=True)
def _restore_logging():
    """Put logging back as it was after each test: an in-process Hydra run (the CLI and
    reproduce tests) configures the root logger with handlers on the test's captured streams,
    which later tests would otherwise inherit (closed streams, or INFO records going there
    instead of to stderr)."""
    import logging

    def snapshot():
        loggers = [logging.getLogger()] + [lg for lg in logging.root.manager.loggerDict.values()
                                           if isinstance(lg, logging.Logger)]
        return {lg: (lg.level, list(lg.handlers), lg.propagate, lg.disabled) for lg in loggers}

    before = snapshot()
    yield
    for lg in snapshot():
        level, handlers, propagate, disabled = before.get(lg, (logging.NOTSET, [], True, False))
        lg.setLevel(level)
        lg.handlers[:] = handlers
        lg.propagate, lg.disabled = propagate, disabled
