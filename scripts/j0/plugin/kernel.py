"""The J0 file made a module in memory, and its speculator made a subclass of vLLM's own
DFlashSpeculator; no file is written, vLLM's module is left as it is.

The module: the J0 file's text compiled under a file name that ends in `speculator.py` (so its
log records read `[speculator.py:N]`, as the patched file's do) and a module name under vLLM's
(`vllm....dflash.j0_<variant>_<sha8>`, so that its logger is vLLM's and prints), its source kept
in `linecache` (Triton reads a kernel's source through `inspect`). Its `os` is a view of the real
module whose `environ` holds J0's switches from `speculator_options`: the patched code reads
VLLM_DFLASH_CTX_NOISE and the dump folder from there, never from the process's environment.

The class: every member of the J0 file's DFlashSpeculator (the whole class body, patched or not)
put on a subclass of vLLM's installed DFlashSpeculator, each function keeping the J0 module's
globals (so `prepare_dflash_inputs` is the J0 kernel's) and its `super()` bound to vLLM's
DFlashSpeculator, so that `super()` reaches what it reached in the J0 file: the class below
DFlashSpeculator. Standard library only (the classes come from the caller).
"""

from __future__ import annotations

import linecache
import os
import sys
import types
from collections.abc import Mapping
from typing import Any

MODULE_PARENT = "vllm.v1.worker.gpu.spec_decode.dflash"
# Not carried over: what Python makes for each class itself (ABCMeta's registry and abstract
# set are computed again for the new class).
_SKIP = frozenset(
    {
        "__dict__",
        "__weakref__",
        "__module__",
        "__qualname__",
        "__doc__",
        "_abc_impl",
        "__abstractmethods__",
    }
)


class _OsView(types.ModuleType):
    """`os`, but for `environ`: the J0 switches of this run (a read-only mapping)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__("os")
        self.environ = types.MappingProxyType(dict(environ))

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def load_module(
    text: str, name: str, filename: str, switches: Mapping[str, str]
) -> types.ModuleType:
    """Execute `text` as module `name` (kept in sys.modules), its code from `filename`."""
    if name in sys.modules:
        return sys.modules[name]
    module = types.ModuleType(name)
    module.__file__ = filename
    lines = text.splitlines(keepends=True)
    # mtime None: linecache.checkcache keeps the entry (it cannot stat a file that is not there).
    linecache.cache[filename] = (len(text), None, lines, filename)
    code = compile(text, filename, "exec", dont_inherit=True)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    module.os = _OsView(switches)
    return module


def _cell(value: Any) -> types.CellType:
    return types.CellType(value)


def _uses_class_cell(function: types.FunctionType, depth: int = 0) -> bool:
    if "__class__" in function.__code__.co_freevars:
        return True
    return depth < 4 and any(
        isinstance(cell.cell_contents, types.FunctionType)
        and _uses_class_cell(cell.cell_contents, depth + 1)
        for cell in function.__closure__ or ()
        if _filled(cell)
    )


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _rebound_cell(name: str, cell: types.CellType, owner: type) -> types.CellType:
    if name == "__class__":
        return _cell(owner)
    value = cell.cell_contents if _filled(cell) else None
    if isinstance(value, types.FunctionType) and _uses_class_cell(value):
        return _cell(rebound(value, owner))  # a decorator's wrapped method
    return cell


def rebound(function: types.FunctionType, owner: type) -> types.FunctionType:
    """`function` with its `super()` (the `__class__` cell) bound to `owner`, also where it is
    a decorator's wrapper around the method (`torch.inference_mode()`: the method in a cell)."""
    if not _uses_class_cell(function):
        return function
    closure = tuple(
        _rebound_cell(name, cell, owner)
        for name, cell in zip(
            function.__code__.co_freevars, function.__closure__ or (), strict=True
        )
    )
    new = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, closure
    )
    new.__kwdefaults__ = function.__kwdefaults__
    new.__qualname__ = function.__qualname__
    new.__doc__ = function.__doc__
    new.__dict__.update(function.__dict__)
    new.__annotations__ = dict(function.__annotations__)
    return new


def _member(value: Any, owner: type) -> Any:
    if isinstance(value, types.FunctionType):
        return rebound(value, owner)
    if isinstance(value, staticmethod | classmethod):
        inner = value.__func__
        return type(value)(
            rebound(inner, owner) if isinstance(inner, types.FunctionType) else inner
        )
    if isinstance(value, property):
        parts = (value.fget, value.fset, value.fdel)
        fget, fset, fdel = (
            rebound(p, owner) if isinstance(p, types.FunctionType) else p for p in parts
        )
        return property(fget, fset, fdel, value.__doc__)
    return value


def transplant(j0_class: type, vllm_class: type, onto: type, name: str) -> type:
    """A subclass of `onto` (itself a subclass of `vllm_class`) holding every member of
    `j0_class`, with `super()` bound to `vllm_class` (see the module's docstring)."""
    if not issubclass(onto, vllm_class):
        raise TypeError(f"{onto.__name__} is not a subclass of {vllm_class.__name__}")
    if j0_class.__bases__ != vllm_class.__bases__:
        raise TypeError(
            f"the J0 file's {j0_class.__name__} derives from {j0_class.__bases__}, vLLM's from "
            f"{vllm_class.__bases__}: not the same class patched"
        )
    members = {
        key: _member(value, vllm_class) for key, value in vars(j0_class).items() if key not in _SKIP
    }
    members["__module__"] = onto.__module__
    members["__qualname__"] = name
    members["__doc__"] = j0_class.__doc__
    return type(name, (onto,), members)
