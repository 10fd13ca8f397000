"""The Hydra callback of a multirun (``conf/config.yaml``: ``hydra.callbacks``): checks every job
before the first starts and prints the sweep's model selection at the end.

Kept apart from ``rankbench.cli`` so that ``rankbench results`` does not import Hydra.
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.experimental.callback import Callback

from rankbench.cli import (
    EXIT_CONFIG,
    EXIT_FAILED_RUNS,
    EXIT_STORE,
    ConfigError,
    expand_sweep,
    log,
    plan_jobs,
    sweep_summary,
)


class SweepSummary(Callback):
    """Hydra callback: validates every job of a multirun before any starts, and summarises at the end.

    A preflight problem (a bad value, an unknown solver, absent data, a sweep without jobs)
    ends the command with status 2 before the first job; after the sweep, the command exits
    1 when any of its runs failed (the other jobs ran to the end).
    """

    def __init__(self) -> None:
        self.run_ids: list[str] | None = None
        self.protocol = None
        self.store: str | None = None

    def on_multirun_start(self, config, **kwargs: Any) -> None:
        """Compose and validate every job of the sweep (basic sweeper); exit 2 listing the bad ones."""
        try:
            self._preflight(config)
        except Exception as exc:  # noqa: BLE001 - Hydra would turn it into a warning and run on
            print(f"rankbench: sweep check failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            sys.exit(EXIT_CONFIG)  # SystemExit passes through Hydra's callback guard

    def _preflight(self, config) -> None:
        if not config.get("preflight", True):
            print("rankbench: preflight=false: no check before the jobs and no summary after "
                  "(see `rankbench results --select`)", file=sys.stderr)
            return
        try:
            jobs = expand_sweep(config)
        except ValueError as exc:  # an exotic sweeper: jobs validate themselves
            log.info("preflight skipped (%s)", exc)
            return
        if not jobs:
            self._refuse(["the sweep has no job (an empty range or list?)"], 0)
        plans, problems = plan_jobs(config, jobs)
        if problems:
            self._refuse(problems, len(jobs))
        ids = [s.run_id for p in plans for s in p.specs]
        for p in plans:
            self.protocol, self.store = p.job.conf.protocol, p.job.conf.store
        skipped = [p for p in plans if p.skip]
        if len(skipped) == len(plans):
            print(f"rankbench: none of the {len(plans)} job(s) has anything to run: "
                  + "; ".join(sorted({f'{p.use.label}: {p.skip}' for p in skipped})), file=sys.stderr)
        self.run_ids = ids
        print(f"rankbench: sweep of {len(jobs)} job(s), {len(ids)} run(s)"
              + (f", {len(skipped)} job(s) with nothing to run" if skipped else "")
              + f"; store {self.store}", file=sys.stderr)
        if self.store is not None:
            from rankbench.store import ResultStore

            try:
                if ids:
                    ResultStore(self.store).check_writable()
            except OSError as exc:
                print(f"rankbench: {exc}", file=sys.stderr)
                sys.exit(EXIT_STORE)
        if len(set(ids)) < len(ids):
            # e.g. solver.C=1e-4,0.0001: equal values spelt twice; with a parallel launcher
            # both jobs would run them (harmless for the store, wasted time)
            print(f"rankbench: warning: {len(ids) - len(set(ids))} run(s) appear in more than one "
                  "job (same dataset, solver, params, fold, seed): check the sweep's values",
                  file=sys.stderr)

    @staticmethod
    def _refuse(problems: list[str], n_jobs: int) -> None:
        print(f"rankbench: {ConfigError(problems, where=f'{n_jobs} sweep jobs checked')}",
              file=sys.stderr)
        sys.exit(EXIT_CONFIG)

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        """Print the model selection over this sweep's stored records; exit 1 if a run failed."""
        if self.run_ids is None or self.store is None:
            return
        from rankbench.store import ResultStore

        store = ResultStore(self.store)
        wanted = set(self.run_ids)
        records, corrupt = store.scan()
        for path, why in corrupt:
            print(f"rankbench: corrupt record file {path}: {why}", file=sys.stderr)
        mine = [r for r in records if r["run_id"] in wanted]
        missing = len(wanted) - len(mine)
        print("\n==== sweep summary ====")
        print(sweep_summary(store.to_frame(records=mine), self.protocol))
        n_failed = sum(r["status"] == "failed" for r in mine)
        if missing:
            print(f"{missing} run(s) of this sweep have no record (killed?): re-run the same command",
                  file=sys.stderr)
        if n_failed or missing or corrupt:
            print(f"rankbench: {n_failed} run(s) failed, {missing} without a record: exit status "
                  f"{EXIT_FAILED_RUNS}", file=sys.stderr)
            sys.exit(EXIT_FAILED_RUNS)
