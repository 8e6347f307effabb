"""j0.image.requirements, the build step's standard-library reader of Requires-Dist: its verdicts
are compared with those of `packaging` (the PyPA's own implementation, in the test environment),
never with values computed by the code under test."""

from __future__ import annotations

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement as PyPARequirement
from packaging.version import Version as PyPAVersion

from j0.image.requirements import Requirement, Version, marker_holds, unmet_requirements

VERSIONS = [
    "0.9",
    "1.0",
    "1.0.0",
    "1.0.post1",
    "1.0.dev0",
    "1.0a1",
    "1.0b2",
    "1.0rc1",
    "1.0.1",
    "1.0+local.1",
    "1.0+abc",
    "1.1",
    "1.1.dev3",
    "2.0",
    "1!0.5",
    "2.14.0",
    "2.14.0+cu129",
    "2.13.0",
    "5.16.1",
    "5.20.9",
    "5.21",
    "0.33.1.dev3+gc50aca144",
    "3.0.0rc2",
    "1.31.0",
]
SPECIFIERS = [
    "==1.0",
    "!=1.0",
    ">=1.0",
    "<=1.0",
    ">1.0",
    "<1.0",
    "~=1.0",
    "~=1.0.0",
    "==1.*",
    "!=1.0.*",
    "==2.14.0",
    ">=5.16.1,<5.21",
    ">=0.133,<0.137",
    "===1.0",
    "==1.0+abc",
    ">1.0.post0",
    "<1.0rc2",
    ">=1.31.0",
    "<3.0",
    ">=1!0",
    "==2.14.*",
]


@pytest.mark.parametrize("spec", SPECIFIERS)
def test_specifiers_agree_with_packaging(spec: str) -> None:
    ours = Requirement.parse(f"thing{spec}")
    theirs = PyPARequirement(f"thing{spec}").specifier
    for version in VERSIONS:
        expected = theirs.contains(version, prereleases=True)
        assert ours.allows(version) == expected, (spec, version)


def test_version_order_agrees_with_packaging() -> None:
    ours = sorted(VERSIONS, key=Version.parse)
    theirs = sorted(VERSIONS, key=PyPAVersion)
    assert [str(PyPAVersion(v)) for v in ours] == [str(PyPAVersion(v)) for v in theirs]


ENV = {
    "os_name": "posix",
    "sys_platform": "linux",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "6.1.0",
    "platform_system": "Linux",
    "platform_version": "#1 SMP",
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
}
MARKERS = [
    'sys_platform == "linux"',
    'sys_platform == "win32"',
    'platform_machine == "x86_64" and python_version >= "3.10"',
    'python_version < "3.9" or platform_system == "Darwin"',
    '(platform_machine == "aarch64" or platform_machine == "x86_64") and os_name == "posix"',
    'python_full_version >= "3.12.1"',
    'extra == "audio"',
    'extra == "audio" and sys_platform == "linux"',
    'platform_system != "Windows"',
    '"linux" in sys_platform',
    'platform_machine not in "arm64 aarch64"',
    "python_version > '3.11'",
]


@pytest.mark.parametrize("marker", MARKERS)
def test_markers_agree_with_packaging(marker: str) -> None:
    assert marker_holds(marker, ENV) == Marker(marker).evaluate({**ENV, "extra": ""})


def test_unmet_requirements_lists_each_with_what_is_installed() -> None:
    installed = {"torch": "2.13.0", "transformers": "5.18.0", "pip": "23.0.1"}
    requires = [
        "torch==2.14.0",
        "transformers<5.21,>=5.16.1",
        "xgrammar>=0.1.30",
        "pywin32; sys_platform == 'win32'",
        "soundfile; extra == 'audio'",
        "Pip>=20",  # names compare canonicalised
        "vllm-flash-attn (==2.7)",
        "vllm[audio]==0.33",  # the wheel's own project: skipped
        "not a requirement!!",
    ]
    unmet = unmet_requirements(requires, installed, skip=["vllm"], env=ENV)
    assert unmet[:3] == [
        "torch==2.14.0 (installed: 2.13.0)",
        "xgrammar>=0.1.30 (not installed)",
        "vllm-flash-attn (==2.7) (not installed)",
    ]
    assert len(unmet) == 4 and unmet[3].startswith("not a requirement!! (cannot be read:")
