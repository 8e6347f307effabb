"""`j0 mini numbers` on a hostile or broken `.tar.xz` (a block's PATH): an empty file, bytes that
are not xz, an xz stream cut short, an archive with a `../` member, an absolute path, a symlink
or hard link to an absolute path or out of the folder: each is a clear refusal naming the
archive (exit 2), nothing is written outside the temporary folder, and no traceback or exit 70.

Before (issue 53, item 7): each ended in exit 70 (tarfile's ReadError or FilterError, an
EOFError), the escape itself already blocked by tarfile's `data` filter.
"""

from __future__ import annotations

import io
import lzma
import tarfile
from pathlib import Path

import pytest

from j0.cli import main
from j0.errors import INPUT_LACKS


def xz_tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for info, data in members:
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue())


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


GOOD = [(entry("run", tarfile.DIRTYPE), b""), (entry("run/mini-run.json"), b"{}")]
ARCHIVES = {
    "empty file": b"",
    "not xz": b"PK\x03\x04 a zip, not an xz stream" * 10,
    "xz cut short": xz_tar(GOOD)[:40],
    "xz of no tar": lzma.compress(b"just text, no tar headers" * 40),
    "dot-dot member": xz_tar([*GOOD, (entry("run/../../escaped"), b"x")]),
    "absolute member": xz_tar([*GOOD, (entry("/tmp/j0-absolute-escape"), b"x")]),
    "absolute symlink": xz_tar([*GOOD, (entry("run/link", tarfile.SYMTYPE, "/etc/passwd"), b"")]),
    "symlink out": xz_tar([*GOOD, (entry("run/up", tarfile.SYMTYPE, "../../.."), b"")]),
    "absolute hard link": xz_tar([*GOOD, (entry("run/hard", tarfile.LNKTYPE, "/etc/passwd"), b"")]),
    "no folder": xz_tar([(entry("loose.json"), b"{}")]),
    # found by tests/fuzz/test_fuzz_archives.py: tarfile's KeyError, exit 70
    "hard link to no member": xz_tar([*GOOD, (entry("run/h", tarfile.LNKTYPE, "run/none"), b"")]),
    "a file where a folder goes": xz_tar([(entry("run"), b"x"), (entry("run/a.json"), b"{}")]),
}


@pytest.mark.parametrize("case", sorted(ARCHIVES))
def test_a_hostile_or_broken_archive_is_refused_by_name(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    archive = folder / "run.tar.xz"
    archive.write_bytes(ARCHIVES[case])
    readme = folder / "README.md"
    readme.write_text("<!-- numbers: engine run.tar.xz -->\n<!-- /numbers -->\n")
    code = main(["mini", "numbers", str(readme)])
    err = capsys.readouterr().err
    assert code == INPUT_LACKS, err
    assert f"{archive}:" in err and "internal error" not in err, err
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/j0-absolute-escape").exists()
