"""Build hook: the wheel carries the validation suite's cases and data (issue 17).

``validation/`` lives at the top of the source tree (it is the project's evidence, edited and read
there); a non-editable install copies its ``cases/``, ``data/`` and notes into the package as
``fluidq/_validation`` so that ``fluidq validate`` and ``fluidq pars --data alpaca_eval`` work from
any folder.  Everything else is configured in ``pyproject.toml``.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SHIPPED = ("cases", "data", "README.md", "RESULTS.md")


class build_py_with_validation(build_py):  # noqa: N801 - setuptools' naming
    def run(self):
        super().run()
        src, dst = HERE / "validation", Path(self.build_lib) / "fluidq" / "_validation"
        if not src.is_dir():  # building from an sdist that already holds the copy
            return
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for name in SHIPPED:
            s = src / name
            if s.is_dir():
                shutil.copytree(s, dst / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            elif s.is_file():
                shutil.copy2(s, dst / name)


setup(cmdclass={"build_py": build_py_with_validation})
