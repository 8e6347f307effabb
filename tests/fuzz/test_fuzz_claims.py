"""Property: of any number of writers claiming one output (j0.edge.atomic.claimed, the flock
beside it that `j0 mini train`, `dumps replay`, `bench matrix`, `drafter fetch` and `bench run`
hold until their last write), in any order of claims and releases, a claim succeeds exactly when
no other writer holds it, and a refused one is exit 64 naming the output (issue 53 item 9). Each
writer opens the lock file itself, as another process does (flock locks conflict between open
files, within one process too).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from j0.edge.atomic import claim_name, claimed
from j0.errors import USAGE, J0Error


@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=20))
def test_one_writer_at_a_time(steps: list[tuple[int, bool]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "nested" / "out"
        held: dict[int, contextlib.ExitStack] = {}
        for writer, claim in steps:
            if claim and writer not in held:
                stack = contextlib.ExitStack()
                try:
                    stack.enter_context(claimed(out, "OUT"))
                except J0Error as refused:
                    assert held, "refused while nobody held it"
                    assert refused.exit_code == USAGE and str(out) in str(refused)
                    assert "another j0 command is writing it now" in str(refused)
                else:
                    assert not held, "claimed while another writer held it"
                    held[writer] = stack
            elif not claim and writer in held:
                held.pop(writer).close()
            assert claim_name(out).exists() == bool(held)
        for stack in held.values():
            stack.close()
        assert not (Path(scratch) / "nested").exists()  # nothing written: nothing left
