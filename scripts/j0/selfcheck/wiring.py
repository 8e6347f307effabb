"""Does the switch reach the kernels? The J0 wiring of DFlashSpeculator, run on a stand-in `self`.

The seed: `VLLM_DFLASH_CTX_NOISE=1` turns J0 on, off by default; the history is a
[max_num_seqs, max_model_len] int32 tensor; `propose` hands it to prepare_dflash_inputs only when
J0 is on. Building a real DFlashSpeculator needs a whole vLLM config and a model, so this runs
the file's own statements instead: the assignments of `self.ctx_noise` and `self.ctx_pool` in
`__init__` (executed in the module's namespace with a stand-in `self`), and the `ctx_pool=`
argument of every prepare_dflash_inputs call in `propose` (evaluated the same way).
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from types import SimpleNamespace
from typing import Any

SWITCH = "VLLM_DFLASH_CTX_NOISE"
_FIELDS = ("ctx_noise", "ctx_pool")


def _function(cls: type, name: str) -> ast.FunctionDef:
    source = textwrap.dedent(inspect.getsource(getattr(cls, name)))
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise ValueError(f"{cls.__name__}.{name} is not a plain function")
    return node


def _assigns_field(stmt: ast.stmt) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    if isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    return any(
        isinstance(t, ast.Attribute)
        and isinstance(t.value, ast.Name)
        and t.value.id == "self"
        and t.attr in _FIELDS
        for t in targets
    )


def _init_state(module: Any, init: ast.FunctionDef, switch: str | None) -> SimpleNamespace:
    stmts = [s for s in init.body if _assigns_field(s)]
    me = SimpleNamespace(max_num_reqs=5, max_model_len=77)
    code = compile(ast.Module(body=stmts, type_ignores=[]), "<J0 wiring>", "exec")
    saved = os.environ.get(SWITCH)
    try:
        if switch is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = switch
        exec(code, dict(vars(module)), {"self": me, "device": "cpu"})
    finally:
        if saved is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = saved
    return me


def _ctx_pool_arguments(propose: ast.FunctionDef) -> list[ast.expr]:
    found = []
    for node in ast.walk(propose):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "prepare_dflash_inputs":
                found += [k.value for k in node.keywords if k.arg == "ctx_pool"]
    return found


def check(module: Any) -> str | None:
    """None when the wiring is as the seed says; else what is wrong."""
    import torch

    cls = getattr(module, "DFlashSpeculator", None)
    if cls is None:
        return "no DFlashSpeculator class"
    try:
        init, propose = _function(cls, "__init__"), _function(cls, "propose")
    except (OSError, TypeError, ValueError, AttributeError) as exc:
        return f"cannot read DFlashSpeculator's source: {exc}"
    if not any(_assigns_field(s) for s in init.body):
        return "DFlashSpeculator.__init__ sets neither self.ctx_noise nor self.ctx_pool"
    try:
        on = _init_state(module, init, "1")
        off = _init_state(module, init, None)
        zero = _init_state(module, init, "0")
    except Exception as exc:
        return f"the J0 statements of DFlashSpeculator.__init__ fail: {exc!r}"
    if getattr(on, "ctx_noise", None) is not True:
        return f"{SWITCH}=1 does not turn J0 on (self.ctx_noise = {getattr(on, 'ctx_noise', '?')})"
    for label, state in (("unset", off), ("0", zero)):
        if getattr(state, "ctx_noise", None) is not False:
            return f"{SWITCH} {label} leaves J0 on: off must be the default"
    pool = getattr(on, "ctx_pool", None)
    if not isinstance(pool, torch.Tensor):
        return "with J0 on, self.ctx_pool is not a tensor"
    if tuple(pool.shape) != (5, 77) or pool.dtype != torch.int32:
        return (
            f"with J0 on, the history is {tuple(pool.shape)} {pool.dtype}; expected "
            "[max_num_reqs, max_model_len] = (5, 77) torch.int32"
        )
    args = _ctx_pool_arguments(propose)
    if not args:
        return "propose never passes ctx_pool to prepare_dflash_inputs: J0 never runs"
    sentinel = object()
    for expr in args:
        code = compile(ast.Expression(body=expr), "<J0 wiring>", "eval")
        for noise, want in ((True, sentinel), (False, None)):
            me = SimpleNamespace(ctx_noise=noise, ctx_pool=sentinel)
            got = eval(code, dict(vars(module)), {"self": me})
            if got is not want:
                state = "on" if noise else "off"
                return (
                    f"propose passes ctx_pool={ast.unparse(expr)}, which with J0 {state} gives "
                    f"{'the history' if got is sentinel else got!r}"
                )
    return None


# --- The prefix-safe variant: propose fills the history at admission ------------------------------

FILL = "fill_ctx_pool_cached_prefix"
FILL_ARGS = (
    "self.ctx_pool",
    "self.ctx_all_token_ids",
    "self.ctx_pool_owner",
    "input_batch.req_ids",
    "input_batch.idx_mapping_np",
    "input_batch.num_computed_tokens_np",
    "num_reqs",
)


def _fill_call(propose: ast.FunctionDef) -> tuple[ast.If | None, ast.Call] | None:
    """The call of FILL in propose, with the `if` it sits in (None at the top level)."""
    for node in ast.walk(propose):
        if isinstance(node, ast.If):
            for stmt in node.body:
                call = getattr(stmt, "value", None)
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == FILL:
                    return node, call
    for stmt in propose.body:
        call = getattr(stmt, "value", None)
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == FILL:
            return None, call
    return None


def _first_prepare_line(propose: ast.FunctionDef) -> int | None:
    lines = [
        node.lineno
        for node in ast.walk(propose)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
        == "prepare_dflash_inputs"
    ]
    return min(lines) if lines else None


def _finds_request_states(module: Any) -> str | None:
    """The variant's lookup of vLLM's RequestState: found from init_speculator's frame, refused
    (RuntimeError) without one."""
    lookup = getattr(module, "_j0_all_token_ids", None)
    if lookup is None:
        return "no _j0_all_token_ids: the fill has no source of the requests' tokens"
    marker = object()
    req_states = SimpleNamespace(all_token_ids=SimpleNamespace(gpu=marker))

    def init_speculator(req_states: Any) -> Any:
        return lookup()

    try:
        if init_speculator(req_states) is not marker:
            return "_j0_all_token_ids() does not return init_speculator's req_states.all_token_ids"
    except Exception as exc:
        return f"_j0_all_token_ids() inside init_speculator fails: {exc!r}"
    try:
        lookup()
    except RuntimeError:
        return None
    return "_j0_all_token_ids() outside init_speculator does not refuse (RuntimeError)"


def check_prefix_safe(module: Any) -> str | None:
    """None when propose calls the fill as the variant does: with the history, vLLM's token
    store, the owner list and the batch's ids, slots and computed counts, only with J0 on and not
    in a dummy run, before prepare_dflash_inputs; else what is wrong."""
    cls = getattr(module, "DFlashSpeculator", None)
    if cls is None:
        return "no DFlashSpeculator class"
    try:
        init, propose = _function(cls, "__init__"), _function(cls, "propose")
    except (OSError, TypeError, ValueError, AttributeError) as exc:
        return f"cannot read DFlashSpeculator's source: {exc}"
    assigned = {
        t.attr
        for s in init.body
        if isinstance(s, ast.Assign | ast.AnnAssign)
        for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        if isinstance(t, ast.Attribute)
    }
    for name in ("ctx_all_token_ids", "ctx_pool_owner"):
        if name not in assigned:
            return f"DFlashSpeculator.__init__ does not set self.{name}"
    found = _fill_call(propose)
    if found is None:
        return f"propose never calls {FILL}: the history is not filled at admission"
    guard, call = found
    args = [ast.unparse(a) for a in call.args]
    if tuple(args) != FILL_ARGS:
        return f"propose calls {FILL}({', '.join(args)}), expected ({', '.join(FILL_ARGS)})"
    prepare = _first_prepare_line(propose)
    if prepare is None or call.lineno > prepare:
        return f"propose calls {FILL} after prepare_dflash_inputs: the first draws miss the fill"
    if guard is None:
        return f"propose calls {FILL} unguarded: it must run only with J0 on, not in dummy runs"
    code = compile(ast.Expression(body=guard.test), "<J0 wiring>", "eval")
    for noise, dummy in ((True, False), (True, True), (False, False)):
        me = SimpleNamespace(ctx_noise=noise)
        got = bool(eval(code, dict(vars(module)), {"self": me, "dummy_run": dummy}))
        if got != (noise and not dummy):
            return (
                f"propose's guard `{ast.unparse(guard.test)}` with J0 {'on' if noise else 'off'}"
                f"{' in a dummy run' if dummy else ''} {'calls' if got else 'skips'} {FILL}"
            )
    return _finds_request_states(module)
