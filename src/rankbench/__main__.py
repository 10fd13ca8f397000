"""``rankbench`` / ``python -m rankbench``: Hydra experiment runs and sweeps, or ``results``.

    rankbench dataset=ohsumed solver=prsvm_plus solver.C=1e-4          # one job, 5 folds
    rankbench -m dataset=ohsumed solver=prsvm_plus solver.log10_C='range(-6,1)'
    rankbench results --select                                          # model selection
"""

from __future__ import annotations

import sys

SUBCOMMANDS = ("results",)


def _terminate(signum, frame) -> None:
    # SIGTERM (a scheduler, a killed sweep) unwinds like an exception: every finally runs, so a
    # peer's process group is killed and its temporary folder removed; the status says why
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int | None:
    """Entry point: ``results ...`` goes to the store browser, anything else to the Hydra app."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "results":
        from rankbench.cli import results_main

        try:
            return results_main(args[1:])
        except BrokenPipeError:  # `rankbench results | head`
            sys.stderr.close()
            return 0
    if argv is not None:
        sys.argv = [sys.argv[0], *args]  # Hydra reads sys.argv
    import hydra

    from rankbench.cli import EXIT_CONFIG, conf_dir, run_job

    if not {"--help", "-h", "--cfg", "-c", "--info", "-i", "--shell-completion", "-sc"} & set(
            args) and not any(a.startswith(("--config-", "-cp", "-cd", "-cn")) for a in args):
        # composed first, so an unknown choice or key exits 2 as every config error does (each
        # job of a sweep is checked by the multirun's preflight, also exit 2)
        from rankbench.plan import check_overrides

        problem = check_overrides([a for a in args if not a.startswith("-")])
        if problem:
            print(f"rankbench: invalid rankbench configuration:\n  - {problem}", file=sys.stderr)
            return EXIT_CONFIG

    app = hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(run_job)
    app()
    return 0


if __name__ == "__main__":
    sys.exit(main())
