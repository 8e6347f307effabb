"""Read a folder of the patch's step dumps (`DIR/stepNNNN.pt`), check each file's format, and cut
the steps into requests.

What the patch's `DFlashSpeculator.propose` saves (overlay/jetspec-j0.patch; the first
VLLM_DFLASH_DUMP_STEPS steps with exactly one request, no dummy or profile run, with aux hidden
states), one `torch.save` of a dict per step:

  positions        int64    [T]           the target's positions of this step
  input_ids        int32    [T]           the target's input ids (anchor first, then drafts)
  aux              bfloat16 [T, H*taps]   the drafter's input: the target layers' taps, concatenated
  num_rejected     int32    [1]           drafts of this step the target rejected
  num_sampled      int32    [1]           tokens the target sampled (0: a prefill chunk)
  ctx_noise        bool                   VLLM_DFLASH_CTX_NOISE (J0 on or off)
and, on steps with a query pass (not the context-only steps of vLLM's "no drafts needed"):
  query_ids        int32    [n+1]         the drafter's query block: the anchor, then n slots
  query_positions  int64    [n+1]
  draft_tokens     int64    [1, n]        the drafter's proposals

Files come from elsewhere, so they are read with `torch.load(..., weights_only=True)`.

Requests: the dumps carry no request id. A step continues the previous one when it starts where
the previous step's committed tokens end (`last valid position + 1`, which is also the previous
query block's anchor position) and, after a query pass, its first input is at that anchor's
position or is that anchor; otherwise it starts a new request. A request normally starts at
position 0; one that starts later is either vLLM's start-up warm-up (with CUDA graphs, before any
real request: vllm/v1/worker/gpu/warmup.py), a prefix-cache hit, or a request whose earlier steps
were not dumped (they ran in batches of several requests).

torch and numpy are imported inside the functions (`j0 --help` stays fast).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.dumps import bounds
from j0.errors import INPUT_LACKS, J0Error

if TYPE_CHECKING:
    import numpy as np

STEP_NAME = re.compile(r"^step(\d{4,})\.pt$")

# Kinds of step within a request.
PREFILL_CHUNK = "prefill-chunk"  # samples nothing: a chunk before the prompt's end
PREFILL_LAST = "prefill-last"  # the chunk that ends the prompt: one sampled token
DECODE = "decode"  # the anchor plus drafts, some of them rejected

# key: (dtype name as torch prints it without "torch.", number of dimensions)
ALWAYS_KEYS: dict[str, tuple[str, int]] = {
    "positions": ("int64", 1),
    "input_ids": ("int32", 1),
    "aux": ("bfloat16", 2),
    "num_rejected": ("int32", 1),
    "num_sampled": ("int32", 1),
}
QUERY_KEYS: dict[str, tuple[str, int]] = {
    "query_ids": ("int32", 1),
    "query_positions": ("int64", 1),
    "draft_tokens": ("int64", 2),
}
ALL_KEYS = (*ALWAYS_KEYS, "ctx_noise", *QUERY_KEYS)


class DumpFormatError(J0Error):
    """One file is not what the patch writes (exit 1: a dump folder with a bad file)."""


@dataclass(frozen=True)
class Step:
    """One dumped draft step (one request)."""

    number: int  # NNNN of stepNNNN.pt
    path: Path
    positions: Any  # np.ndarray int64 [T]
    input_ids: Any  # np.ndarray int64 [T] (int32 in the file)
    num_rejected: int
    num_sampled: int
    ctx_noise: bool
    aux: Any = None  # torch.Tensor bfloat16 [T, W], or None where absent (lenient loads only)
    query_ids: Any = None  # np.ndarray int64 [n+1] or None
    query_positions: Any = None  # np.ndarray int64 [n+1] or None
    draft_tokens: Any = None  # np.ndarray int64 [n] (row 0 of [1, n]) or None
    layout: dict[str, str] = field(default_factory=dict)  # key -> "dtype [shape]" as in the file

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def num_tokens(self) -> int:
        return len(self.positions)

    @property
    def has_query(self) -> bool:
        return self.query_ids is not None

    @property
    def num_spec(self) -> int:
        """Draft slots per query block (n), 0 for a context-only step."""
        return 0 if self.query_ids is None else len(self.query_ids) - 1

    @property
    def num_valid(self) -> int:
        """Target tokens of this step that are committed (all but the rejected drafts)."""
        return self.num_tokens - self.num_rejected

    @property
    def last_valid_pos(self) -> int:
        """Position of the last committed target token (the patch's `last_valid_pos`)."""
        return int(self.positions[max(self.num_valid, 1) - 1])

    @property
    def anchor_pos(self) -> int:
        """Where the anchor (bonus or next prefill token) lands: right after the last valid one."""
        return self.last_valid_pos + 1

    def aux_float(self) -> np.ndarray:
        """aux as float32 NumPy (bf16 widens exactly)."""
        import torch

        if self.aux is None:
            raise J0Error(f"{self.path}: no aux tensor")
        return self.aux.to(torch.float32).numpy()


@dataclass
class DumpSet:
    """A folder's steps in number order, with the files that could not be read as dumps."""

    root: Path
    steps: list[Step]
    problems: list[tuple[Path, str]]  # (file, why): files that are not what the patch writes
    missing: list[int]  # step numbers absent between the first and the last one

    @property
    def ctx_noise_values(self) -> set[bool]:
        return {s.ctx_noise for s in self.steps}


@dataclass
class Request:
    """Consecutive steps of one request, as far as the dumps show it."""

    number: int  # 0-based, in folder order
    steps: list[Step]
    kinds: list[str]
    warmup: bool = False  # vLLM's start-up warm-up (before the first request that starts at 0)

    @property
    def start_pos(self) -> int:
        return int(self.steps[0].positions[0])

    @property
    def first(self) -> Step:
        return self.steps[0]

    @property
    def last(self) -> Step:
        return self.steps[-1]

    def label(self) -> str:
        return f"request {self.number} ({self.first.name}..{self.last.name})"


# --- One file ------------------------------------------------------------------------------------


def _dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _layout(tensor: Any) -> str:
    return f"{_dtype_name(tensor)} {list(tensor.shape)}"


def _tensor(path: Path, data: dict[str, Any], key: str, spec: tuple[str, int], strict: bool) -> Any:
    import torch

    value = data[key]
    if not isinstance(value, torch.Tensor):
        raise DumpFormatError(f"{path}: {key} is a {type(value).__name__}, expected a tensor")
    dtype, ndim = spec
    if value.dim() != ndim:
        raise DumpFormatError(
            f"{path}: {key} has shape {list(value.shape)}, expected {ndim} dimension(s)"
        )
    if strict and _dtype_name(value) != dtype:
        raise DumpFormatError(f"{path}: {key} is {_dtype_name(value)}, expected {dtype}")
    return value


def _count(path: Path, data: dict[str, Any], key: str, strict: bool) -> int:
    value = _tensor(path, data, key, ALWAYS_KEYS[key], strict)
    if value.numel() != 1:
        raise DumpFormatError(
            f"{path}: {key} has shape {list(value.shape)}, expected [1] (one request per step)"
        )
    first = value.reshape(-1)[0]
    if value.dtype.is_floating_point and not float(first).is_integer():
        raise DumpFormatError(f"{path}: {key} is {float(first)}, expected a whole number")
    return int(first)


def read_file(path: Path) -> Any:
    """torch.load with weights_only=True, after the file's ceilings (j0.dumps.bounds); any failure
    is a DumpFormatError naming the file."""
    import torch

    problem = bounds.file_problem(path)
    if problem is not None:
        raise DumpFormatError(f"{path}: {problem}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise DumpFormatError(f"{path}: cannot be read as a torch file: {exc}") from None


def looks_like_dump(data: Any) -> bool:
    """A dict with the two keys every dump has: enough to call a folder a dump folder."""
    return isinstance(data, dict) and "positions" in data and "input_ids" in data


def parse_step(path: Path, data: Any, number: int, strict: bool = True) -> Step:
    """Check a loaded dict against the patch's format and turn it into a Step.

    strict: every key the patch writes, with its exact dtype (what `j0 dumps check` needs).
    Lenient (strict=False): positions and input_ids are required, any other key may be absent
    and dtypes may differ (dump sets written by a reference, e.g. `j0 dumps replay`).
    """
    import numpy as np

    if not isinstance(data, dict):
        raise DumpFormatError(f"{path}: holds a {type(data).__name__}, expected a dict of tensors")
    required = [*ALWAYS_KEYS, "ctx_noise"] if strict else ["positions", "input_ids"]
    missing = [k for k in required if k not in data]
    if missing:
        raise DumpFormatError(
            f"{path}: no {', '.join(missing)} (the patch writes {', '.join(ALL_KEYS)})"
        )
    unknown = sorted(set(data) - set(ALL_KEYS), key=str)
    if strict and unknown:
        raise DumpFormatError(f"{path}: unexpected key(s) {', '.join(map(str, unknown))}")
    _check_bounds(path, data)
    positions = _tensor(path, data, "positions", ALWAYS_KEYS["positions"], strict)
    input_ids = _tensor(path, data, "input_ids", ALWAYS_KEYS["input_ids"], strict)
    num_tokens = positions.shape[0]
    if num_tokens == 0:
        raise DumpFormatError(f"{path}: positions is empty, expected at least one target token")
    if input_ids.shape[0] != num_tokens:
        raise DumpFormatError(
            f"{path}: input_ids has {input_ids.shape[0]} entries and positions {num_tokens}"
        )
    layout = {k: _layout(v) for k, v in data.items() if hasattr(v, "dtype")}
    aux = None
    if "aux" in data:
        aux = _tensor(path, data, "aux", ALWAYS_KEYS["aux"], strict)
        if aux.shape[0] != num_tokens:
            raise DumpFormatError(
                f"{path}: aux has {aux.shape[0]} rows, expected one per target token ({num_tokens})"
            )
    counts = {}
    for key in ("num_rejected", "num_sampled"):
        counts[key] = _count(path, data, key, strict) if key in data else 0
    ctx_noise = data.get("ctx_noise", False)
    if hasattr(ctx_noise, "numel") and ctx_noise.numel() == 1:
        ctx_noise = bool(ctx_noise.item()) if not strict else ctx_noise
    if not isinstance(ctx_noise, bool):
        raise DumpFormatError(f"{path}: ctx_noise is {ctx_noise!r}, expected True or False")
    layout["ctx_noise"] = f"bool {ctx_noise}"
    present = [k for k in QUERY_KEYS if k in data]
    query: dict[str, Any] = {}
    if present:
        if strict and len(present) != len(QUERY_KEYS):
            absent = [k for k in QUERY_KEYS if k not in data]
            raise DumpFormatError(
                f"{path}: has {', '.join(present)} but not {', '.join(absent)} "
                "(a query step has all three)"
            )
        for key in present:
            query[key] = _tensor(path, data, key, QUERY_KEYS[key], strict)
        n_plus_1 = None
        for key in ("query_ids", "query_positions"):
            if key in query:
                if n_plus_1 is not None and query[key].shape[0] != n_plus_1:
                    raise DumpFormatError(f"{path}: query_ids and query_positions differ in length")
                n_plus_1 = query[key].shape[0]
        if "draft_tokens" in query:
            drafts = query["draft_tokens"]
            if drafts.shape[0] != 1:
                raise DumpFormatError(
                    f"{path}: draft_tokens has shape {list(drafts.shape)}, expected [1, n]"
                )
            if n_plus_1 is not None and drafts.shape[1] != n_plus_1 - 1:
                raise DumpFormatError(
                    f"{path}: draft_tokens has {drafts.shape[1]} columns, expected "
                    f"{n_plus_1 - 1} (query block of {n_plus_1} minus the anchor)"
                )
        if n_plus_1 is not None and n_plus_1 < 1:
            raise DumpFormatError(f"{path}: empty query block")

    def arr(t: Any) -> np.ndarray:
        return t.detach().to("cpu").numpy().astype(np.int64).reshape(-1)

    _refuse_negative(path, "positions", arr(positions))
    step = Step(
        number=number,
        path=path,
        positions=arr(positions),
        input_ids=arr(input_ids),
        num_rejected=counts["num_rejected"],
        num_sampled=counts["num_sampled"],
        ctx_noise=ctx_noise,
        aux=aux,
        query_ids=arr(query["query_ids"]) if "query_ids" in query else None,
        query_positions=arr(query["query_positions"]) if "query_positions" in query else None,
        draft_tokens=arr(query["draft_tokens"]) if "draft_tokens" in query else None,
        layout=layout,
    )
    if strict and not 0 <= step.num_rejected < step.num_tokens:
        raise DumpFormatError(
            f"{path}: num_rejected is {step.num_rejected}, expected 0..{step.num_tokens - 1} "
            f"(the step has {step.num_tokens} target tokens and the first is never a draft)"
        )
    if strict and step.num_sampled < 0:
        raise DumpFormatError(f"{path}: num_sampled is {step.num_sampled}, expected >= 0")
    return step


def _refuse_negative(path: Path, key: str, values: np.ndarray) -> None:
    """A position is a token's place in its request, never below 0 (a negative one made the
    check's history a NumPy array of negative length): the file and the field named."""
    if values.size and int(values.min()) < 0:
        index = int((values < 0).nonzero()[0][0])
        raise DumpFormatError(
            f"{path}: {key}[{index}] is {int(values[index])}, expected 0 or more "
            f"(a target token's position in its request; {int((values < 0).sum())} of "
            f"{values.size} negative)"
        )


def _check_bounds(path: Path, data: dict[Any, Any]) -> None:
    """Every tensor of the dict against j0.dumps.bounds, before anything is built from them."""
    import torch

    for key, value in data.items():
        if isinstance(value, torch.Tensor):
            problem = bounds.tensor_problem(str(key), value)
            if problem is not None:
                raise DumpFormatError(f"{path}: {problem}")


def load_step(path: Path, strict: bool = True) -> Step:
    match = STEP_NAME.match(path.name)
    number = int(match.group(1)) if match else -1
    return parse_step(path, read_file(path), number, strict)


# --- A folder ------------------------------------------------------------------------------------


def step_files(root: Path) -> list[tuple[int, Path]]:
    """(number, path) of every stepNNNN.pt in root, by number; exit 2 where there is none."""
    if not root.exists():
        raise J0Error(f"{root}: no such folder", INPUT_LACKS)
    if not root.is_dir():
        raise J0Error(f"{root}: not a folder (expected a dump folder of stepNNNN.pt)", INPUT_LACKS)
    found = []
    for path in root.iterdir():
        match = STEP_NAME.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    if not found:
        raise J0Error(
            f"{root}: not a dump folder: no stepNNNN.pt files (the patch writes them where "
            "VLLM_DFLASH_DUMP points, with VLLM_DFLASH_DUMP_STEPS > 0)",
            INPUT_LACKS,
        )
    return sorted(found)


def load_dir(root: Path, strict: bool = True) -> DumpSet:
    """Every stepNNNN.pt of root. Files that are not dumps are listed in `problems`.

    Raises J0Error with exit 2 when root is no dump folder: missing, no stepNNNN.pt, or no file
    in it holds a dump (a dict with positions and input_ids).
    """
    files = step_files(root)
    steps: list[Step] = []
    problems: list[tuple[Path, str]] = []
    dump_like = 0
    for number, path in files:
        try:
            data = read_file(path)
        except DumpFormatError as exc:
            problems.append((path, str(exc)))
            continue
        if looks_like_dump(data):
            dump_like += 1
        try:
            steps.append(parse_step(path, data, number, strict))
        except DumpFormatError as exc:
            problems.append((path, str(exc)))
    if dump_like == 0:
        first = problems[0][1] if problems else f"{files[0][1]}: not a dump"
        raise J0Error(
            f"{root}: not a dump folder: none of its {len(files)} stepNNNN.pt files holds a "
            f"step dump (a dict with positions, input_ids, ...); first: {first}",
            INPUT_LACKS,
        )
    numbers = [n for n, _ in files]
    missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
    return DumpSet(root=root, steps=steps, problems=problems, missing=missing)


# --- Requests ------------------------------------------------------------------------------------


def continues(prev: Step, step: Step) -> bool:
    """Does `step` continue the request of `prev` (the step dumped just before it)?

    After a context-only step (no query pass) the next one starts right after its last token.
    After a query pass, the next step of the same request starts within the previous step's
    tokens or right after them (at the anchor, behind the accepted drafts), and either sits at
    the previous query block's anchor position or starts with its anchor token: so a count or
    a position that was altered shows as an inconsistency, not as a new request.
    """
    start = int(step.positions[0])
    if not prev.has_query:
        return start == int(prev.positions[-1]) + 1
    if not int(prev.positions[0]) < start <= int(prev.positions[-1]) + 1:
        return False
    at_anchor = prev.query_positions is not None and start == int(prev.query_positions[0])
    same_token = prev.query_ids is not None and int(step.input_ids[0]) == int(prev.query_ids[0])
    return at_anchor or same_token


def step_kind(step: Step, prev_kind: str | None) -> str:
    """prefill-chunk, prefill-last or decode (prev_kind: the same request's previous step)."""
    if step.num_sampled == 0:
        return PREFILL_CHUNK
    if prev_kind is None:
        # A request's first dumped step: a decode only if it shows drafts being verified.
        multi = step.num_rejected > 0 or step.num_sampled > 1
        verifies = multi and step.num_sampled + step.num_rejected == step.num_tokens
        return DECODE if verifies else PREFILL_LAST
    return PREFILL_LAST if prev_kind == PREFILL_CHUNK else DECODE


def group_requests(steps: list[Step], consecutive: bool = True) -> list[Request]:
    """Cut the steps (in number order) into requests; mark the start-up warm-up ones.

    A step that does not continue the previous one starts a request; with `consecutive`, so does
    a step whose file number does not follow the previous one's (a missing file: the checks must
    not bridge it). Without it, a set that leaves steps out (a reference's query steps only)
    keeps its requests whole. The requests before the
    first one that starts at position 0 and that start elsewhere are vLLM's start-up warm-up
    (with CUDA graphs, vllm/v1/worker/gpu/warmup.py runs requests through the engine before it
    serves; their positions start past 0 because their prefill ran in a batch of several).
    """
    requests: list[Request] = []
    for step in steps:
        prev = requests[-1].last if requests else None
        follows = prev is not None and (not consecutive or step.number == prev.number + 1)
        if prev is not None and follows and continues(prev, step):
            req = requests[-1]
            req.steps.append(step)
            req.kinds.append(step_kind(step, req.kinds[-1]))
        else:
            requests.append(Request(len(requests), [step], [step_kind(step, None)]))
    for req in requests:
        if req.start_pos == 0:
            break
        req.warmup = True
    return requests
