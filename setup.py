"""Ships ``captrack-lmeval-hook.pth`` into site-packages (see captrack_lmeval_hook.py); metadata is in setup.cfg."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "captrack-lmeval-hook.pth"


class BuildWithHook(build_py):
    """build_py that also copies the .pth hook to the top of the wheel (site-packages once installed)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / PTH
        shutil.copyfile(Path(__file__).parent / PTH, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH)]


setup(cmdclass={"build_py": BuildWithHook})
