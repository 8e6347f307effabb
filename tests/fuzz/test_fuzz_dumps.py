"""Property: a dump file, whatever it holds, is read as a Step or refused with a DumpFormatError
(a J0Error with a message naming the file), within a bounded allocation; never another exception.

Inputs: dicts of the patch's keys and others holding small tensors of any dtype and shape,
tensors expanded to huge claimed sizes (stride 0), Python values where tensors go; and the bytes
of a recorded H200 dump file (tests/data/engine-h200) with bytes flipped, cut or appended.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.dumps import load

ROOT = Path(__file__).resolve().parents[2]
RECORDED = (ROOT / "tests" / "data" / "engine-h200" / "j0-on" / "step0001.pt").read_bytes()
KEYS = [*load.ALL_KEYS, "weight", ""]
DTYPES = [torch.int64, torch.int32, torch.int8, torch.bfloat16, torch.float32, torch.bool]


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    shape = draw(st.lists(st.integers(0, 5), min_size=1, max_size=2) | st.just([]))
    dtype = draw(st.sampled_from(DTYPES))
    base = torch.zeros(shape, dtype=dtype)
    if draw(st.booleans()) and shape and all(shape):
        # one stored element that claims a huge size (what a 1 KB hostile file can do)
        claimed = [draw(st.sampled_from([1, 7, 1000])) for _ in shape]
        claimed[draw(st.integers(0, len(shape) - 1))] = draw(st.sampled_from([10**6, 10**9]))
        base = base.reshape(-1)[:1].reshape([1] * len(shape)).expand(claimed)
    return base


values = st.one_of(
    tensors(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
dumps = st.dictionaries(st.sampled_from(KEYS), values, max_size=10)


def _is_step_or_refusal(result: Any) -> None:
    assert isinstance(result, (load.Step, load.DumpFormatError)), type(result)


@given(dumps, st.booleans())
def test_any_dict_is_a_step_or_a_refusal(data: dict[str, Any], strict: bool) -> None:
    path = Path("step0001.pt")
    result = outcome(lambda: load.parse_step(path, data, 1, strict), load.DumpFormatError)
    _is_step_or_refusal(result)
    if isinstance(result, load.DumpFormatError):
        assert "step0001.pt" in str(result)


@given(dumps)
def test_any_saved_dict_loads_as_a_step_or_a_refusal(tmp_path_factory: Any, data: Any) -> None:
    folder = tmp_path_factory.mktemp("dump")
    buffer = io.BytesIO()
    torch.save(data, buffer)
    path = folder / "step0000.pt"
    path.write_bytes(buffer.getvalue())
    _is_step_or_refusal(outcome(lambda: load.load_step(path), load.DumpFormatError))


@given(
    st.lists(st.tuples(st.integers(0, len(RECORDED) - 1), st.integers(0, 255)), max_size=8),
    st.integers(0, len(RECORDED)),
    st.binary(max_size=64),
)
def test_a_damaged_recorded_file_is_a_step_or_a_refusal(
    tmp_path_factory: Any, flips: list[tuple[int, int]], cut: int, tail: bytes
) -> None:
    data = bytearray(RECORDED)
    for at, value in flips:
        data[at] = value
    path = tmp_path_factory.mktemp("damaged") / "step0001.pt"
    path.write_bytes(bytes(data[:cut]) + tail)
    _is_step_or_refusal(outcome(lambda: load.load_step(path), load.DumpFormatError))


@st.composite
def consistent_claims(draw: st.DrawFn) -> dict[str, torch.Tensor]:
    """positions and input_ids (and maybe aux) that agree on a claimed length T, each one stored
    element expanded: the checks on lengths pass, and only the bounds stand in the way."""
    tokens = draw(st.sampled_from([2, 10**6, 10**9]))

    def claim(dtype: torch.dtype, *shape: int) -> torch.Tensor:
        return torch.zeros([1] * len(shape), dtype=dtype).expand(*shape)

    found = {"positions": claim(torch.int64, tokens), "input_ids": claim(torch.int32, tokens)}
    if draw(st.booleans()):
        found["aux"] = claim(torch.bfloat16, tokens, draw(st.sampled_from([8, 1 << 20])))
    return found


@given(
    st.dictionaries(st.sampled_from(KEYS), values, min_size=1, max_size=3) | consistent_claims(),
    st.booleans(),
)
def test_a_recorded_dump_with_keys_replaced_is_a_step_or_a_refusal(
    replaced: dict[str, Any], strict: bool
) -> None:
    """The recorded step with one to three keys replaced (or added): most of it is still the
    patch's format, so the replaced values reach the code past the first checks."""
    data = {**torch.load(io.BytesIO(RECORDED), weights_only=True), **replaced}
    path = Path("step0001.pt")
    _is_step_or_refusal(
        outcome(lambda: load.parse_step(path, data, 1, strict), load.DumpFormatError)
    )


def test_the_recorded_file_itself_is_a_step() -> None:
    """The control: the undamaged file is a step (the patch's format)."""
    step = load.parse_step(Path("step0001.pt"), torch.load(io.BytesIO(RECORDED)), 1)
    assert step.num_tokens >= 1 and step.has_query
