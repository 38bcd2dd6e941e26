"""bin/demo: starts without installing anything beyond Lodestar and the UI bundle (apt-get and
npm on PATH refuse and record any call), prints where the UI is and how to sign in, and the
UI it names signs in with the token it points at, in Chromium."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.support.server import free_port
from tests.support.waiting import await_

ROOT = Path(__file__).resolve().parents[2]
REFUSING = "#!/bin/sh\necho \"$0 $*\" >> \"{log}\"\nexit 1\n"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path, Path]]:
    subprocess.run([str(ROOT / "bin" / "build-ui")], check=True, timeout=600)  # current, as bin/setup leaves it
    guards = tmp_path / "bin"
    guards.mkdir()
    calls = tmp_path / "installs.log"
    for name in ("apt-get", "apt", "npm", "pip"):
        (guards / name).write_text(REFUSING.format(log=calls))
        (guards / name).chmod(0o755)
    out = tmp_path / "demo.out"
    env = {**os.environ, "PATH": f"{guards}:{os.environ['PATH']}", "LODESTAR_PORT": str(free_port()),
           "LODESTAR_DATA_DIR": str(tmp_path / "data")}
    with out.open("wb") as sink:
        process = subprocess.Popen([str(ROOT / "bin" / "demo")], stdout=sink, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    try:
        yield process, out, calls
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def test_the_demo_installs_nothing_more_and_its_banner_leads_to_the_ui(browser: Browser, demo) -> None:
    process, out, calls = demo
    banner = await_(lambda: "Sign in:" in out.read_text() and out.read_text(), "the demo's banner", timeout=120)
    assert process.poll() is None, banner
    assert not calls.exists(), f"the demo tried to install: {calls.read_text()}"
    url = re.search(r"Web UI:\s+(http://127\.0\.0\.1:\d+/)", banner)
    token_file = re.search(r"cat (\S+/admin\.token)", banner)
    assert url and token_file, banner
    # the banner's CLI and HTTP lines, run as printed, reach this demo on its port (not 8080)
    shell = {key: value for key, value in os.environ.items() if key not in ("LODESTAR_SERVER", "LODESTAR_DATA_DIR")}
    for line, answer in ((r"CLI:\s+(export LODESTAR_DATA_DIR=.*)", "purchases"), (r"HTTP:\s+(GMS=.*)", '"ok"')):
        command = re.search(line, banner)
        assert command, banner
        done = subprocess.run(["bash", "-c", command[1]], cwd=ROOT, env=shell, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and answer in done.stdout, (command[1], done.stdout, done.stderr)
    page = browser.new_page()
    page.goto(url[1])
    page.fill("#token", Path(token_file[1]).read_text().strip())
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#q")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.locator("#q").fill("purchases")
    page.keyboard.press("Enter")
    expect(page.locator(".result-link").first).to_have_text("purchases")  # the examples are loaded
    page.close()
    process.send_signal(signal.SIGTERM)  # the demo stops its server with it
    process.wait(timeout=30)
    await_(lambda: subprocess.run(["pgrep", "-g", str(process.pid)], capture_output=True).returncode != 0,
           "the demo's server gone")
