"""What records say about the machine: the CPU numba compiles for (``sysinfo.jit_cpu_name``)."""

from __future__ import annotations

import llvmlite.binding as ll
from numba.core import config

from rankbench.sysinfo import jit_cpu_name, machine_info


def test_jit_cpu_is_the_cpu_llvm_compiles_for_or_numbas_override(monkeypatch):
    monkeypatch.setattr(config, "CPU_NAME", None)
    assert jit_cpu_name() == ll.get_host_cpu_name() != ""
    assert machine_info()["jit_cpu"] == ll.get_host_cpu_name()
    monkeypatch.setattr(config, "CPU_NAME", "generic")  # NUMBA_CPU_NAME=generic (portable caches)
    assert jit_cpu_name() == "generic"
