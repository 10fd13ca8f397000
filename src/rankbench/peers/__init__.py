"""The papers' peer programs, built from source and run by the harness as solvers.

- ``svmlight``: SVM-light V6.02 in ranking mode (``svm_learn -z p``), Joachims' RankSVM as
  LETOR and Chapelle & Keerthi ran it (``max_iter`` = ``-#``: LETOR's SVMLight# used 5000).
  Its C sources come from the sdist of the ``svmlight`` 0.4 package on the package index
  (``lib/``); its licence allows scientific use but not redistribution, so it is fetched at
  build time and never committed.
- ``liblinear_ranksvm``: LIBLINEAR 2.11's ranksvm extension (Lee & Lin's C++ Tree-TRON,
  ``train -s 8``), from ``$PEERS_SRC/liblinear-ranksvm.tar.gz``.
- ``sofia_ml``: Sculley's sofia-ml (SPD: ``--loop_type rank``), from
  ``$PEERS_SRC/sofia-ml.tar.gz``, with two minimal fixes for g++ >= 12 applied at build time
  (``rankbench.peers.build.SOFIA_PATCHES``).
- ``liblinear_pairs``: no build; ``liblinear-official`` from the package index, trained on
  explicit difference vectors (Chapelle's footnote 2).

``make peers`` (``python -m rankbench.peers build``) builds them into ``$RANKBENCH_PEERS``
(default ``~/.cache/rankbench/peers``), outside the source tree; ``python -m rankbench.peers
status`` says what is built. A solver whose program is not built raises ``SolverUnavailable``
("run make peers"), which the harness stores as a skipped run, never a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

PEERS = {
    "svmlight": ("svm_learn", "svm_classify"),
    "liblinear": ("train", "predict"),
    "sofia": ("sofia-ml",),
}


def home() -> Path:
    """Where built peers live: ``$RANKBENCH_PEERS``, else ``~/.cache/rankbench/peers``."""
    return Path(os.environ.get("RANKBENCH_PEERS") or Path.home() / ".cache" / "rankbench" / "peers")


def source_dir() -> Path | None:
    """Peer source archives: ``$PEERS_SRC`` (the Makefile sets it to ../shared/peers when that
    folder exists); None when unset."""
    env = os.environ.get("PEERS_SRC")
    return Path(env) if env else None


def program(peer: str, name: str | None = None) -> Path:
    """Path of a built peer program (``svmlight``'s ``svm_learn`` by default)."""
    return home() / peer / "bin" / (name or PEERS[peer][0])


def built(peer: str) -> bool:
    """Whether every program of ``peer`` is built and executable."""
    return all(os.access(program(peer, n), os.X_OK) for n in PEERS[peer])


def check_available(peer: str) -> None:
    """Raise ``SolverUnavailable`` saying how to build ``peer`` when it is not built."""
    if not built(peer):
        from rankbench.estimators.registry import SolverUnavailable

        raise SolverUnavailable(f"peer program {peer} is not built under {home()}: run make peers "
                                "(python -m rankbench.peers build)")
