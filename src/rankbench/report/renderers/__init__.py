"""Renderers, one module per paper (plus the leaderboard), by the name experiment configs use.

A renderer is ``f(RenderContext) -> Artefact`` registered with ``@RENDERERS.register()`` in a
module of this package (``rankbench.plugins.Registry``: the package's modules are imported
the first time the registry is read, so a new renderer is one decorated function);
``report.renderer`` in an experiment config names one (the function's own name).
"""

from rankbench.plugins import Registry

RENDERERS: Registry = Registry("renderer", ("rankbench.report.renderers",))


def get_renderer(name: str):
    """The renderer called ``name``; ValueError listing the known ones (and the closest) otherwise."""
    return RENDERERS.get(name)
