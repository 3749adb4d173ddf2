"""Ships ``captrack-lmeval-hook.pth`` into site-packages (see captrack_lmeval_hook.py); metadata is in setup.cfg."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "captrack-lmeval-hook.pth"


class BuildWithHook(build_py):
    """build_py that also copies the .pth hook to the top of the wheel (site-packages once installed)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / PTH
        shutil.copyfile(Path(__file__).parent / PTH, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH)]


class _WithHook:
    """Wraps setuptools' editable strategy so the editable wheel carries the .pth hook too."""

    def __init__(self, strategy: Any) -> None:
        self._strategy = strategy

    def __call__(self, wheel: Any, files: list[str], mapping: dict[str, str]) -> None:
        self._strategy(wheel, files, mapping)
        wheel.writestr(PTH, (Path(__file__).parent / PTH).read_bytes())

    def __enter__(self) -> _WithHook:
        self._strategy.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._strategy.__exit__(*exc)


class EditableWithHook(editable_wheel):
    """``pip install -e .`` installs the .pth hook as a wheel install does."""

    def _select_strategy(self, *args: Any, **kwargs: Any) -> Any:
        return _WithHook(super()._select_strategy(*args, **kwargs))


setup(cmdclass={"build_py": BuildWithHook, "editable_wheel": EditableWithHook})
