"""``verbose=True`` progress lines through Python logging.

An estimator's progress line goes to its module's logger at INFO, so Hydra's per-job
``rankbench.log`` and any application's logging configuration receive it.  When that logger
would drop an INFO record (logging not configured for it: no handler, or a level above INFO),
a user who asked for ``verbose=True`` still sees the line: it is written to stderr instead.
"""

from __future__ import annotations

import logging
import sys


def verbose_line(logger: logging.Logger, msg: str) -> None:
    """Log ``msg`` at INFO on ``logger``, or print it to stderr when logging would drop it."""
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        logger.info(msg)
    else:
        print(f"[{logger.name}] {msg}", file=sys.stderr, flush=True)
