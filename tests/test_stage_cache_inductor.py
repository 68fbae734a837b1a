"""Inductor's own caches follow the stage cache (harness.backends.inductor): with the cache on,
Inductor's folder is in ours and its FX graph cache is on; with `--cache=off` the cache is off
and the folder is a fresh one, so the run is cold; a record's status comes from Inductor's
counters, and a second real compile of one program hits Inductor's cache."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from harness.backend_interface import CaseContext, Program  # noqa: E402 - after the skip: it needs torch
from harness.backends.inductor import InductorBackend  # noqa: E402
from harness.protocol import CacheSettings  # noqa: E402
from harness.stages import reuse  # noqa: E402


@pytest.fixture
def backend_under(monkeypatch, tmp_path):
    """An InductorBackend made in a worker whose cache mode is the one given; Inductor's global
    settings and the worker's cache restored after."""
    import torch._functorch.config
    import torch._inductor.config

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "unset")

    def make(mode: str) -> InductorBackend:
        reuse.use_cache(CacheSettings(mode, str(tmp_path / "stages"), 1 << 30))
        return InductorBackend("inductor", {})

    with torch._inductor.config.patch(fx_graph_cache=torch._inductor.config.fx_graph_cache), \
            torch._functorch.config.patch(enable_autograd_cache=torch._functorch.config.enable_autograd_cache):
        yield make
    reuse.use_cache(None)


def test_with_the_cache_on_inductor_keeps_its_cache_in_ours(backend_under, tmp_path):
    import torch._inductor.config

    backend = backend_under("on")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "stages" / "compilers" / "inductor")
    assert torch._inductor.config.fx_graph_cache and backend.caching


def test_with_the_cache_off_inductor_compiles_cold(backend_under, tmp_path):
    import torch._functorch.config
    import torch._inductor.config

    backend = backend_under("off")
    folder = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    assert str(tmp_path) not in folder and os.path.isdir(folder) and not os.listdir(folder)
    assert not torch._inductor.config.fx_graph_cache and not torch._functorch.config.enable_autograd_cache
    assert backend.cache_status({}) == "off"


@pytest.mark.parametrize("counter, status", [("fxgraph_cache_hit", "hit"), ("fxgraph_cache_miss", "miss"),
                                             ("fxgraph_cache_bypass", "uncacheable")])
def test_a_compile_s_status_is_what_inductor_counted(backend_under, counter, status):
    from torch._dynamo.utils import counters

    backend = backend_under("on")
    before = dict(counters["inductor"])
    counters["inductor"][counter] += 1
    try:
        assert backend.cache_status(before) == status
    finally:
        counters["inductor"][counter] -= 1


class MulAddRelu(torch.nn.Module):
    def forward(self, x, y):
        return (x * y + 1).relu()


def compiled(backend: InductorBackend) -> CaseContext:
    """The case of one real compile of MulAddRelu through the backend (the result checked)."""
    case = CaseContext(lambda phase: None)
    inputs = (torch.randn(4, 8), torch.randn(4, 8))
    module = backend.compile(Program("tiny/mul_add_relu", MulAddRelu(), inputs), case)
    assert torch.allclose(backend.run(module, inputs, case), MulAddRelu()(*inputs))
    return case


@pytest.mark.e2e   # compiles through Inductor (C++ kernels), about 10 s cold
def test_a_second_compile_of_one_program_hits_inductors_cache(backend_under):
    first, second = compiled(backend_under("on")), compiled(backend_under("on"))
    assert (first.cache["inductor_code"], second.cache["inductor_code"]) == ("miss", "hit")
    assert first.fingerprints["inductor_code"] == second.fingerprints["inductor_code"]
