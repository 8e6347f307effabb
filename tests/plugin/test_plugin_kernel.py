"""The plugin's class surgery (j0.plugin.kernel), on small classes of the test's own: the J0
file's class body moved onto a subclass of vLLM's class, its `super()` reaching what it reached
in the J0 file (the class below vLLM's), decorated methods included; and the in-memory module:
its source readable through `inspect` (Triton reads kernels so), its `os.environ` J0's switches."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

from j0.plugin.kernel import load_module, transplant


def wrapped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    return wrapper


class Below:
    def __init__(self) -> None:
        self.calls = ["below"]

    def step(self) -> str:
        return "below"


class VllmsFile(Below):  # vLLM's class, as installed
    def __init__(self) -> None:
        super().__init__()
        self.calls.append("vllm")

    def step(self) -> str:
        return "vllm+" + super().step()


class J0File(Below):  # the same class as the J0 file has it
    def __init__(self) -> None:
        super().__init__()
        self.calls.append("j0")

    @wrapped
    def step(self) -> str:
        return "j0+" + super().step()

    @property
    def kind(self) -> str:
        return "j0-property:" + super().step()


class Plugin(VllmsFile):
    pass


def test_the_j0_body_runs_on_a_subclass_of_vllms_class() -> None:
    built = transplant(J0File, VllmsFile, Plugin, "Built")
    obj = built()
    assert isinstance(obj, VllmsFile) and isinstance(obj, Plugin)
    # vLLM's __init__ never ran: super() in the J0 __init__ went to Below, as in the J0 file.
    assert obj.calls == ["below", "j0"]
    assert obj.step() == "j0+below"
    assert obj.kind == "j0-property:below"
    # The J0 file's own class is unchanged.
    assert J0File().step() == "j0+below"


def test_a_class_of_another_base_is_refused() -> None:
    class Elsewhere:
        pass

    class Other(Elsewhere):
        pass

    with pytest.raises(TypeError, match="not the same class patched"):
        transplant(Other, VllmsFile, Plugin, "Built")


TEXT = """import os

def switch():
    return os.environ.get("VLLM_DFLASH_CTX_NOISE", "0"), os.path.join("a", "b")
"""


def test_the_module_reads_its_switches_not_the_environment() -> None:
    name = "vllm_test_plugin_kernel_module"
    filename = "/nonexistent/j0-plugin-test/speculator.py"
    assert "VLLM_DFLASH_CTX_NOISE" not in os.environ
    module = load_module(TEXT, name, filename, {"VLLM_DFLASH_CTX_NOISE": "1"})
    try:
        assert module.switch() == ("1", os.path.join("a", "b"))
        assert "VLLM_DFLASH_CTX_NOISE" not in os.environ
        assert inspect.getsource(module.switch).startswith("def switch():")
        assert inspect.getsourcefile(module.switch) == filename
        with pytest.raises(TypeError):
            module.os.environ["VLLM_DFLASH_CTX_NOISE"] = "0"  # type: ignore[index]
    finally:
        del sys.modules[name]
