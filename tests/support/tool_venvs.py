"""Virtual environments of the tools whose own integrations the tests point at Lodestar (DataHub's
ingestion sources, dbt, Airflow). Their pins conflict with each other and with Lodestar's, so
each tool gets a venv of its own, built from `tests/integrations/requirements/<tool>.txt` under
`test-artifacts/venvs/<tool>-<hash of the requirements>` and reused while the file is unchanged.

`python -m tests.support.tool_venvs TOOL...` builds them ahead of a test run."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "integrations" / "requirements"
VENVS = ROOT / "test-artifacts" / "venvs"
INSTALL_TIMEOUT_S = 1800


def requirements(tool: str) -> Path:
    path = REQUIREMENTS / f"{tool}.txt"
    if not path.is_file():
        raise ValueError(f"no requirements for {tool!r}: expected {path}")
    return path


def venv_dir(tool: str) -> Path:
    digest = hashlib.sha256(requirements(tool).read_bytes()).hexdigest()[:12]
    return VENVS / f"{tool}-{digest}"


def tool_venv(tool: str) -> Path:
    """The bin/ folder of the tool's venv, built first when missing (one builder at a time)."""
    home = venv_dir(tool)
    done = home / ".complete"
    if done.exists():
        return home / "bin"
    VENVS.mkdir(parents=True, exist_ok=True)
    with (VENVS / f".{tool}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _build(tool, home)
    return home / "bin"


def _build(tool: str, home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
    log = home.with_suffix(".log")
    with log.open("w") as out:
        for command in ([sys.executable, "-m", "venv", str(home)],
                        [str(home / "bin" / "pip"), "install", "--disable-pip-version-check", "-q",
                         "-r", str(requirements(tool))]):
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                raise RuntimeError(f"building the {tool} venv failed ({' '.join(command)}); see {log}:\n"
                                   + log.read_text()[-3000:])
    (home / ".complete").write_text(requirements(tool).read_text())


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(tool_venv(name))
