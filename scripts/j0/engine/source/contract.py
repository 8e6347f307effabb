"""The prefix-safe variant's (and the J0 audit's) contract with vLLM's engine, checked against
the installed vLLM's own source text (ast; vLLM is never imported).

The variant reads vLLM's RequestState from the frame of the `init_speculator` call that builds
DFlashSpeculator (`sys._getframe`, in `__init__`), and copies from its `all_token_ids.gpu`. That
holds while, in the vllm package under SITE:

  v1/worker/gpu/spec_decode/__init__.py  `init_speculator` takes a parameter `req_states` and
                                         builds `DFlashSpeculator(...)` in its own body;
  v1/worker/gpu/model_runner.py          passes its `self.req_states` to `init_speculator(...)`
                                         and makes it as `RequestState(...)`;
  v1/worker/gpu/states.py                `RequestState.__init__` sets `self.all_token_ids` (a
                                         StagedWriteTensor) and `add_request` writes it;
  v1/worker/gpu/buffer_utils.py          `StagedWriteTensor` sets `self.gpu`.

Each broken clause is one problem naming the file and what changed. Standard library only: the
image build runs this on the base image's Python.
"""

from __future__ import annotations

import ast
from pathlib import Path

from j0.errors import J0Error

SPEC_INIT = "vllm/v1/worker/gpu/spec_decode/__init__.py"
MODEL_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
STATES = "vllm/v1/worker/gpu/states.py"
BUFFERS = "vllm/v1/worker/gpu/buffer_utils.py"
WHY = "the prefix-safe variant reads req_states from init_speculator's frame"


def _tree(site: Path, relpath: str, problems: list[str]) -> ast.Module | None:
    path = site / relpath
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except FileNotFoundError:
        problems.append(f"{path}: no such file ({WHY}; vLLM 0.33.0 has it)")
    except (OSError, SyntaxError, ValueError) as exc:
        problems.append(f"{path}: cannot be read as Python ({exc})")
    return None


def _function(nodes: list[ast.stmt], name: str) -> ast.FunctionDef | None:
    return next((n for n in nodes if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name` (a plain name or an attribute's last part) anywhere under `node`."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                found.append(sub)
    return found


def _sets_self(node: ast.AST, attr: str) -> bool:
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else []
        if isinstance(sub, ast.AnnAssign):
            targets = [sub.target]
        for t in targets:
            if (
                isinstance(t, ast.Attribute)
                and t.attr == attr
                and getattr(t.value, "id", "") == "self"
            ):
                return True
    return False


def _is_self_attr(node: ast.expr, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and getattr(node.value, "id", "") == "self"
    )


def _check_spec_init(site: Path, problems: list[str]) -> None:
    tree = _tree(site, SPEC_INIT, problems)
    if tree is None:
        return
    where = site / SPEC_INIT
    fn = _function(tree.body, "init_speculator")
    if fn is None:
        problems.append(f"{where}: no function init_speculator ({WHY})")
        return
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    if "req_states" not in params:
        problems.append(
            f"{where}: init_speculator has no parameter req_states (its parameters: "
            f"{', '.join(params) or 'none'}); {WHY}"
        )
    if not _calls(fn, "DFlashSpeculator"):
        problems.append(
            f"{where}: init_speculator no longer builds DFlashSpeculator(...) in its own body, so "
            f"its frame is not on the stack when the speculator's __init__ runs; {WHY}"
        )


def _check_model_runner(site: Path, problems: list[str]) -> None:
    tree = _tree(site, MODEL_RUNNER, problems)
    if tree is None:
        return
    where = site / MODEL_RUNNER
    calls = _calls(tree, "init_speculator")
    if not calls:
        problems.append(f"{where}: no call of init_speculator(...) ({WHY})")
    else:
        passes = any(
            (len(c.args) >= 3 and _is_self_attr(c.args[2], "req_states"))
            or any(
                k.arg == "req_states" and _is_self_attr(k.value, "req_states") for k in c.keywords
            )
            for c in calls
        )
        if not passes:
            problems.append(
                f"{where}: init_speculator(...) is no longer called with self.req_states (as its "
                f"third argument or req_states=); {WHY}"
            )
    if not _calls(tree, "RequestState"):
        problems.append(f"{where}: self.req_states is no longer made as RequestState(...)")


def _check_states(site: Path, problems: list[str]) -> None:
    tree = _tree(site, STATES, problems)
    if tree is None:
        return
    where = site / STATES
    cls = _class(tree, "RequestState")
    if cls is None:
        problems.append(f"{where}: no class RequestState ({WHY})")
        return
    init, add = _function(cls.body, "__init__"), _function(cls.body, "add_request")
    if init is None or not _sets_self(init, "all_token_ids"):
        problems.append(
            f"{where}: RequestState.__init__ no longer sets self.all_token_ids (the variant and "
            "the audit read a request's committed tokens there)"
        )
    elif not _calls(init, "StagedWriteTensor"):
        problems.append(f"{where}: RequestState.all_token_ids is no longer a StagedWriteTensor")
    if add is None or "all_token_ids" not in ast.unparse(add):
        problems.append(f"{where}: RequestState.add_request no longer writes all_token_ids")


def _check_buffers(site: Path, problems: list[str]) -> None:
    tree = _tree(site, BUFFERS, problems)
    if tree is None:
        return
    cls = _class(tree, "StagedWriteTensor")
    if cls is None or not _sets_self(cls, "gpu"):
        problems.append(
            f"{site / BUFFERS}: StagedWriteTensor no longer sets self.gpu (the variant copies "
            "from all_token_ids.gpu)"
        )


def problems(site: Path) -> list[str]:
    """Every broken clause of the contract in the vllm package under `site`; [] when it holds."""
    found: list[str] = []
    for check in (_check_spec_init, _check_model_runner, _check_states, _check_buffers):
        check(site, found)
    return found


def require(site: Path, what: str) -> None:
    """Raise (exit 1) naming every broken clause; `what` says who asks (image build, ...)."""
    found = problems(site)
    if found:
        raise J0Error(
            f"{what}: the installed vLLM breaks the prefix-safe variant's contract with its "
            "engine:\n  " + "\n  ".join(found)
        )
