"""The one build step pyproject.toml cannot say: the vLLM plugin's pins and patches put inside
the built package (j0/plugin/data/overlay/...), since an installed wheel has no checkout to read
them from (docs/plugin.md). An editable install reads the checkout's own overlay/ instead."""

import re
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PINS = "overlay/pins.env"
# The pins of the releases the plugin was proven on that name a file: V0340_PATCH_FILE=...
_FILE_PIN = re.compile(r"^V\d{4,}_\w*FILE=(\S+)$")


def plugin_files() -> list[str]:
    lines = (ROOT / PINS).read_text(encoding="utf-8").splitlines()
    return [PINS, *(m[1] for line in lines if (m := _FILE_PIN.match(line.strip())))]


class BuildWithPluginData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for relpath in plugin_files():
            target = Path(self.build_lib) / "j0" / "plugin" / "data" / relpath
            self.mkpath(str(target.parent))
            self.copy_file(str(ROOT / relpath), str(target))


setup(cmdclass={"build_py": BuildWithPluginData})
