"""Progress of a batch of runs: a tqdm bar on a terminal, else one log line per run with ETA."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

log = logging.getLogger("rankbench.runner")


class Progress:
    """A tqdm bar on a terminal; elsewhere (logs, CI, Slurm) one log line per run with ETA."""

    def __init__(self, total: int, stored: int, enabled: bool):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.bar = None
        self.enabled = enabled and total > 0
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="runs", unit="run", file=sys.stderr,
                            dynamic_ncols=True, postfix={"already stored": stored})

    def step(self, record: dict[str, Any]) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_description(f"{record['dataset']} f{record['fold']} {record['solver']}")
            self.bar.update(1)
            return
        el = time.perf_counter() - self.t0
        eta = el / self.done * (self.total - self.done)
        log.info("run %d/%d %s: %s fold %s %s (elapsed %.0f s, eta %.0f s)", self.done, self.total,
                 record["status"], record["dataset"], record["fold"], record["solver"], el, eta)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

