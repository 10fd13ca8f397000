"""Benchmarks behind `make bench`: each part is a function ``run(quick, [out], [config]) -> rows``
registered in ``PARTS`` by its module (``@PARTS.register("<part>")``): a new part is one new
file."""

from rankbench.plugins import Registry

PARTS = Registry("benchmark part", ("rankbench.bench",))
