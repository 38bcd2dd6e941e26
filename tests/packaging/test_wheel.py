"""The wheel is the whole product: built from the checkout or from the sdist (the same wheel),
installed into an empty virtualenv from the package index, its `lodestar` script serves the
example metadata and the web UI from outside the checkout, with nothing of the checkout on its
paths."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support.processes import ServeProcess
from tests.support.waiting import await_

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 300
INSTALL_TIMEOUT_S = 900  # acryl-datahub and its dependencies, from pip's cache once they were downloaded
# What the product reads at run time besides its modules, as the wheel holds it.
RUN_TIME_FILES = [
    "schemas/entity-registry.yml",
    *(f"schemas/{p.relative_to(ROOT / 'schemas')}" for p in sorted((ROOT / "schemas/avro").rglob("*.avsc"))),
    *(f"lodestar/examples/{p.name}" for p in sorted((ROOT / "examples").glob("*.json"))),
    "lodestar/api/graphql/schema.graphql",
    "spark_emitter/PlanCapture.java",
    "lodestar/ui/dist/index.html",
    "lodestar/ui/dist/app.js",
    "lodestar/ui/dist/app.css",
]
PURCHASES = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"  # in examples/10-purchase-history.json


def run(*command: str | Path, timeout: float, cwd: Path | None = None) -> str:
    """What the command printed; it must succeed."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout[-4000:]}" \
                                 f"\n{done.stderr[-4000:]}"
    return done.stdout


def only(directory: Path, pattern: str) -> Path:
    [found] = directory.glob(pattern)
    return found


def fresh_checkout(into: Path) -> Path:
    """The checkout's files, tracked or not, without what git ignores (the UI bundle and its
    node_modules, build/, .venv): what a clone has. Building there leaves this checkout alone
    while other tests run from it."""
    listed = run("git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=60)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # not a file deleted in the working tree, nor a symlink to a folder
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """The sdist, the wheel built from it and the wheel built from a fresh checkout (`pip wheel .`)."""
    out = tmp_path_factory.mktemp("builds")
    checkout = fresh_checkout(out / "checkout")
    run(sys.executable, "-m", "build", "--sdist", "--outdir", out / "sdist", checkout, timeout=BUILD_TIMEOUT_S)
    sdist = only(out / "sdist", "lodestar-*.tar.gz")
    run(sys.executable, "-m", "build", "--wheel", "--outdir", out / "from-sdist", sdist, timeout=BUILD_TIMEOUT_S)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out / "from-checkout", checkout,
        timeout=BUILD_TIMEOUT_S, cwd=checkout)
    return {"sdist": sdist, "from-sdist": only(out / "from-sdist", "*.whl"),
            "from-checkout": only(out / "from-checkout", "*.whl")}


def test_the_sdist_holds_what_builds_the_wheel_and_no_build_output(builds):
    with tarfile.open(builds["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    ui_sources = {f"lodestar/ui/src/{p.name}" for p in (ROOT / "lodestar/ui/src").iterdir()}
    needed = {"setup.py", "pyproject.toml", "bin/build-ui", "entity-registry.yml", "lodestar/ui/package.json",
              "lodestar/ui/package-lock.json", *ui_sources,
              *(f"examples/{p.name}" for p in (ROOT / "examples").glob("*.json"))}
    assert needed <= names, sorted(needed - names)
    assert not [n for n in names if n.startswith(("lodestar/ui/dist", "lodestar/ui/node_modules"))]


def test_the_sdist_builds_the_same_wheel_as_the_checkout(builds):
    with zipfile.ZipFile(builds["from-sdist"]) as a, zipfile.ZipFile(builds["from-checkout"]) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        assert [n for n in a.namelist() if a.read(n) != b.read(n)] == []


def test_the_wheel_holds_every_file_the_product_reads_and_not_the_ui_sources(builds):
    with zipfile.ZipFile(builds["from-sdist"]) as wheel:
        names = set(wheel.namelist())
        assert wheel.read("schemas/entity-registry.yml") == (ROOT / "entity-registry.yml").read_bytes()
    assert [f for f in RUN_TIME_FILES if f not in names] == []
    assert not [n for n in names if n.startswith(("lodestar/ui/src/", "lodestar/ui/node_modules/"))]


@pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)
def test_the_installed_wheel_serves_the_examples_and_the_web_ui(builds, tmp_path, monkeypatch):
    # Not activated, and nothing of the checkout or of a virtualenv on any path.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    away = [ROOT, Path(sys.prefix).resolve(), tmp_path]
    monkeypatch.setenv("PATH", os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep)
        if p and not any(Path(p).resolve().is_relative_to(a) for a in away)))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, timeout=120, cwd=outside)
    run(venv / "bin/python", "-m", "pip", "install", "--quiet", builds["from-sdist"], timeout=INSTALL_TIMEOUT_S,
        cwd=outside)

    where = run(venv / "bin/python", "-c", "import lodestar, schemas.registry as r; print(lodestar.__file__); "
                "print(r.REGISTRY_FILE)", timeout=60, cwd=outside).split()
    assert len(where) == 2 and all(Path(p).is_relative_to(venv) for p in where), where

    with ServeProcess(tmp_path / "data", None, "--examples", program=[str(venv / "bin/lodestar")],
                      cwd=outside) as served:
        client = served.client()
        assert client.call("GET", "/health")["status"] == "ok"
        hits = await_(lambda: [r["urn"] for r in client.call("GET", "/v1/search?query=purchases")["results"]],
                      "the example metadata searchable")
        assert PURCHASES in hits
        assert client.entity(PURCHASES)["aspects"]["schemaMetadata"]

        with zipfile.ZipFile(builds["from-sdist"]) as wheel:
            page, script = (wheel.read(f"lodestar/ui/dist/{name}") for name in ("index.html", "app.js"))
        with urllib.request.urlopen(served.url + "/") as response:
            assert response.status == 200 and response.read() == page
        [asset] = re.findall(r'<script src="(/ui/[^"]+)"', page.decode())
        with urllib.request.urlopen(served.url + asset) as response:
            assert response.status == 200 and response.read() == script
