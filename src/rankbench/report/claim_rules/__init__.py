"""Claim rules: each computes one claim's verdict from the stored records (see ``report.ledger``).

A rule is ``f(cx: ClaimContext, **args) -> Verdict`` registered with ``@CLAIM_RULES.register()``
in a module of this package (``rankbench.plugins.Registry``; the modules are imported on first
read); ``experiments/<paper>/claims.csv`` names it in its ``rule`` column and gives ``args``.
``generic`` holds the rules every paper uses (a published number against ours with its
confidence interval, a paired comparison over queries, a speed ratio, ...); the other
modules hold one paper's own.
"""

from rankbench.plugins import Registry

CLAIM_RULES: Registry = Registry("claim rule", ("rankbench.report.claim_rules",))
