"""Running `lodestar` as a real process in tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ingest.rest import LodestarError, RestClient
from tests.support.server import free_port

LODESTAR = [sys.executable, "-m", "lodestar"]
TOKEN = "process-admin-token"
# A deadline, not a delay: a start on a machine whose cores are all busy can take many times
# its usual second or two, and a server that did not start is stopped before the test fails.
START_TIMEOUT_S = 180


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*LODESTAR, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


class ServeProcess:
    """`lodestar serve` (or `command`, e.g. `gms`) on a free port; `start()` returns once /health
    answers. What it prints
    (the banner, errors, the access log) goes to a file beside the data directory, read by
    `output()`: a pipe nobody reads would stall the server once full."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, *extra: str, command: str = "serve",
                 program: Sequence[str] = LODESTAR, cwd: Path | None = None):
        self.data_dir = data_dir
        self.command = command
        self.program, self.cwd = list(program), cwd  # e.g. an installed `lodestar` script, run outside the checkout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {})}
        self.extra = extra
        self.proc: subprocess.Popen | None = None
        self.log = data_dir.parent / f"{data_dir.name}.out"

    def start(self) -> ServeProcess:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*self.program, self.command, "--data-dir", str(self.data_dir), "--port", str(self.port),
                 "--admin-token", TOKEN, *self.extra],
                env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
            )
        try:
            self._await_health()
        except BaseException:
            self.stop()
            raise
        return self

    def _await_health(self) -> None:
        client = RestClient(self.url)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lodestar {self.command} exited {self.proc.returncode}: {self.output()}")
            try:
                if client.request("GET", "/health")[0] == 200:
                    return
            except LodestarError:
                pass
            assert time.monotonic() < deadline, (
                f"lodestar {self.command} did not become healthy within {START_TIMEOUT_S:g}s")
            time.sleep(0.05)

    def output(self) -> str:
        """Everything the process printed so far."""
        return self.log.read_text(errors="replace")

    def client(self) -> RestClient:
        return RestClient(self.url, TOKEN)

    def wait(self, timeout: float = 30) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)  # the background threads get lodestar.server.STOP_TIMEOUT

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
