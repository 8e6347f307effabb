"""Property: whatever a `.tar.xz` holds (members named with `..`, absolute paths, links of either
kind pointing anywhere, folders, bytes cut short), `j0 mini numbers`' reader of a kept run
(j0.mini.numbers.unpacked) gives one folder inside its temporary folder or a refusal naming the
archive (J0Error, exit 2), and nothing lands outside that folder (issue 53 item 7).
"""

from __future__ import annotations

import io
import lzma
import tarfile
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.errors import INPUT_LACKS, J0Error
from j0.mini import numbers

parts = st.sampled_from(["run", "..", "a", "/", "/tmp", "b.json", ".", "~"])
names = st.lists(parts, min_size=1, max_size=4).map(lambda p: "/".join(p).replace("//", "/"))
members = st.lists(
    st.tuples(
        names,
        st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE]),
        names,
    ),
    max_size=5,
)


def archive_of(items: list[tuple[str, bytes, str]], cut: int | None) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, kind, link in items:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, link, 0o755
            data = b"{}" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = lzma.compress(raw.getvalue())
    return data if cut is None else data[:cut]


@given(members, st.none() | st.integers(0, 200))
def test_any_archive_is_one_folder_inside_or_refused_by_name(
    items: list[tuple[str, bytes, str]], cut: int | None
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "given"
        path = root / "results" / "run.tar.xz"
        path.parent.mkdir(parents=True)
        path.write_bytes(archive_of(items, cut))
        temporary = Path(scratch) / "tmp"  # where the reader unpacks, this example's alone
        temporary.mkdir()
        saved, tempfile.tempdir = tempfile.tempdir, str(temporary)
        try:
            found = outcome(lambda: numbers.unpacked(path, "engine run.tar.xz"), J0Error)
        finally:
            tempfile.tempdir = saved
        if isinstance(found, J0Error):
            assert found.exit_code == INPUT_LACKS and str(path) in str(found), found
        else:
            folder = Path(found).resolve()
            assert folder.is_dir() and folder.parent.parent == temporary.resolve()
        assert all(p.name.startswith("j0-numbers-") for p in temporary.iterdir())
        assert sorted(p.name for p in Path(scratch).iterdir()) == ["given", "tmp"]
        assert sorted(p.name for p in root.rglob("*")) == ["results", "run.tar.xz"]
