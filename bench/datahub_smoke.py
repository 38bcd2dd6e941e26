"""DataHub's own smoke-test suite against `lodestar serve`: how many of its tests pass.

    .venv/bin/python -m bench.datahub_smoke [TEST_FILE ...] [--suite DIR] [--out FILE] [--private-kafka]

The suite (DataHub's `smoke-test/`, kept outside the product; `--suite` or the
DATAHUB_SMOKE_SUITE environment variable, else the first `shared/datahub-smoke-test/smoke-test`
above this checkout) runs unmodified in a virtual environment of its own
(`test-artifacts/smoke-venv`, made on first use with the pinned acryl-datahub and the libraries
the suite imports; never the project's .venv). Lodestar runs as `lodestar serve` on a new data
directory and a free port; the admin principal `datahub` gets a random password at first start
(LODESTAR_ADMIN_PASSWORD), which the suite is given as ADMIN_PASSWORD.

The only adaptations are the suite's own environment variables: DATAHUB_GMS_URL and
DATAHUB_FRONTEND_URL (both Lodestar), ADMIN_USERNAME/ADMIN_PASSWORD, USE_STATIC_SLEEP=1 (a 1 s
wait instead of asking a Docker Kafka broker for consumer lag), DATAHUB_KAFKA_URL and
DATAHUB_KAFKA_SCHEMA_REGISTRY_URL (test_e2e.py's `datahub-kafka` sink; with --private-kafka a
broker of this run's own, which Lodestar's event log uses, and Lodestar's schema registry), and
on Lodestar's side LODESTAR_PASSWORD_MIN_LENGTH=1 (the suite signs users up with 4-character
passwords; Lodestar's default minimum is 8).

Prints passed/failed/error/skipped per file and the total; writes every test's outcome and
the first line of its failure to `--out` (JSON). Not a CI gate: the suite is partly red.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import requests

from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "test-artifacts" / "smoke-venv"
OUT = ROOT / "test-artifacts" / "datahub-smoke.json"
SERVERS = ROOT / "deploy" / "servers.sh"
REQUIREMENTS = (  # the suite's requirements.txt, with the client Lodestar pins instead of DataHub's source tree
    "acryl-datahub[datahub-rest,datahub-kafka]==1.7.0.17", "pytest>=6.2", "pytest-dependency>=0.5.1", "psutil",
    "tenacity", "pydantic>2", "slack-sdk==3.18.1", "aiohttp", "joblib", "networkx", "deepdiff!=8.0.0", "jinja2",
    "requests<=2.31.0")
EXCLUDED = {  # test files that need more than a GMS and a frontend
    "tests/cypress/integration_test.py": "Cypress: drives DataHub's own React UI in a browser",
    "tests/test_stateful_ingestion.py": "ingests from a MySQL database",
    "tests/database/test_database.py": "MySQL's gap locking in DataHub's SQL store (fixtures for a MySQL source)",
    "tests/actions/doc_propagation/test_propagation.py": "runs datahub-actions in Docker",
    "tests/trace/test_api_trace.py": "reads DataHub's Elasticsearch indices on :9200 and its Kafka topics",
}
HEALTH_DEADLINE_S = 120


def suite_dir(given: str | None) -> Path:
    """The suite: --suite, DATAHUB_SMOKE_SUITE, else shared/datahub-smoke-test/smoke-test above here."""
    if given or os.environ.get("DATAHUB_SMOKE_SUITE"):
        return Path(given or os.environ["DATAHUB_SMOKE_SUITE"]).resolve()
    for parent in ROOT.parents:
        candidate = parent / "shared" / "datahub-smoke-test" / "smoke-test"
        if candidate.is_dir():
            return candidate
    sys.exit("no smoke-test suite found: pass --suite DIR")


def default_files(suite: Path) -> list[str]:
    """Every test file of the suite but the EXCLUDED ones."""
    found = {str(p.relative_to(suite)) for p in suite.glob("test_*.py")}
    found |= {str(p.relative_to(suite)) for p in (suite / "tests").rglob("*.py")
              if p.name.startswith("test_") or p.name.endswith("_test.py")}
    return sorted(found - set(EXCLUDED))


def ensure_venv(venv: Path) -> Path:
    """The suite's interpreter, the environment made (or remade) when REQUIREMENTS changed."""
    marker = venv / "requirements.json"
    python = venv / "bin" / "python"
    if marker.exists() and json.loads(marker.read_text()) == list(REQUIREMENTS) and python.exists():
        return python
    print(f"making the suite's environment in {venv} ...", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
    marker.write_text(json.dumps(list(REQUIREMENTS)))
    return python


class PrivateKafka:
    """A Kafka broker of this run's own (deploy/servers.sh in a private run dir, free ports)."""

    def __init__(self, run_dir: Path):
        self.port = free_port()
        self.env = {**os.environ, "LODESTAR_SERVERS_RUN": str(run_dir), "LODESTAR_KAFKA_PORT": str(self.port),
                    "LODESTAR_KAFKA_CONTROLLER_PORT": str(free_port()), "LODESTAR_KAFKA_HEAP": "384m",
                    "LODESTAR_KAFKA_START_TIMEOUT": "400"}

    def run(self, command: str) -> None:
        done = self.run_quietly(command)
        if done.returncode != 0:
            raise RuntimeError(f"servers.sh {command} kafka: {done.stdout}{done.stderr}")

    def run_quietly(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SERVERS), command, "kafka"], env=self.env, capture_output=True, text=True,
                              timeout=600)


def start_kafka(work: Path, attempts: int = 3) -> PrivateKafka:
    """A private broker started, on new free ports after a start that failed (a port taken
    meanwhile by another process)."""
    for attempt in range(1, attempts + 1):
        kafka = PrivateKafka(work / f"kafka-{attempt}")
        try:
            kafka.run("start")
            return kafka
        except RuntimeError as err:
            print(f"the private broker did not start (attempt {attempt}): {str(err).splitlines()[-1]}", flush=True)
            kafka.run_quietly("stop")
    raise RuntimeError(f"the private broker did not start in {attempts} attempts")


class Lodestar:
    """`lodestar serve` on a new data directory: the admin `datahub` with a random password."""

    def __init__(self, data: Path, kafka_bootstrap: str | None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(18)
        data.mkdir(parents=True, exist_ok=True)
        if kafka_bootstrap:
            (data / "lodestar.yml").write_text(f'event_log: kafka\nkafka: {{bootstrap: "{kafka_bootstrap}"}}\n')
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LODESTAR_ADMIN_PASSWORD": self.password,
               "LODESTAR_PASSWORD_MIN_LENGTH": "1"}
        self.log = (data / "serve.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lodestar.cli.main", "serve", "--data-dir", str(data), "--port", str(self.port),
             "--access-log", "off"], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.token = ""
        deadline = time.monotonic() + HEALTH_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"lodestar serve exited {self.process.returncode}: see {data / 'serve.log'}")
            try:
                if requests.get(f"{self.url}/health", timeout=5).status_code == 200:
                    self.token = (data / "admin.token").read_text().strip()
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"lodestar serve did not answer within {HEALTH_DEADLINE_S} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def run_suite(python: Path, suite: Path, files: list[str], lodestar: Lodestar, kafka: str | None,
              junit: Path) -> int:
    env = {**os.environ, "DATAHUB_GMS_URL": lodestar.url, "DATAHUB_FRONTEND_URL": lodestar.url,
           "ADMIN_USERNAME": "datahub", "ADMIN_PASSWORD": lodestar.password, "USE_STATIC_SLEEP": "1",
           "DATAHUB_TELEMETRY_ENABLED": "false", "PYTHONDONTWRITEBYTECODE": "1",
           "DATAHUB_KAFKA_URL": kafka or "127.0.0.1:1",  # without a broker the Kafka sink fails at once
           "DATAHUB_KAFKA_SCHEMA_REGISTRY_URL":  # the admin token as HTTP Basic's password
               lodestar.url.replace("http://", f"http://datahub:{lodestar.token}@") + "/schema-registry/api/"}
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "DATAHUB_GMS_TOKEN", "DATAHUB_GMS_HOST"):
        env.pop(name, None)
    done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN", "--tb=line",
                           f"--junitxml={junit}", *files], cwd=suite, env=env)
    return done.returncode


def outcomes(junit: Path) -> list[dict[str, str]]:
    """Each test case of the JUnit XML: {file, test, outcome, message}."""
    results = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                text = (found.get("message") or found.text or "").strip()
                message = text.splitlines()[0][:300] if text else ""
                break
        results.append({"file": _file_of(case.get("classname", "")), "test": case.get("name", ""),
                        "outcome": outcome, "message": message})
    return results


def _file_of(classname: str) -> str:
    """The test file of a JUnit classname (`tests.tokens.x_test` or `tests.x_test.TestClass`)."""
    parts = classname.split(".")
    if len(parts) > 1 and parts[-1][:1].isupper():
        parts = parts[:-1]
    return "/".join(parts) + ".py"


def report(results: list[dict[str, str]]) -> Counter[str]:
    by_file: dict[str, Counter[str]] = {}
    for result in results:
        by_file.setdefault(result["file"], Counter())[result["outcome"]] += 1
    total: Counter[str] = Counter()
    print(f"\n{'file':<60} {'passed':>6} {'failed':>6} {'error':>6} {'skipped':>7}")
    for file in sorted(by_file):
        counts = by_file[file]
        total.update(counts)
        print(f"{file:<60} {counts['passed']:>6} {counts['failed']:>6} {counts['error']:>6} {counts['skipped']:>7}")
    print(f"{'total':<60} {total['passed']:>6} {total['failed']:>6} {total['error']:>6} {total['skipped']:>7}")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="test files relative to the suite (default: all but the excluded)")
    parser.add_argument("--suite", help="the smoke-test folder (env DATAHUB_SMOKE_SUITE)")
    parser.add_argument("--venv", default=str(VENV), help=f"the suite's environment (default {VENV})")
    parser.add_argument("--out", default=str(OUT), help=f"per-test results, JSON (default {OUT})")
    parser.add_argument("--private-kafka", action="store_true",
                        help="a Kafka broker of this run's own for Lodestar's event log and test_e2e's Kafka sink")
    parser.add_argument("--list-excluded", action="store_true", help="print the excluded files and why, and stop")
    args = parser.parse_args(argv)
    if args.list_excluded:
        for file, reason in EXCLUDED.items():
            print(f"{file}: {reason}")
        return 0
    suite = suite_dir(args.suite)
    files = args.files or default_files(suite)
    python = ensure_venv(Path(args.venv))
    work = Path(tempfile.mkdtemp(prefix="datahub-smoke-"))
    kafka: PrivateKafka | None = None
    lodestar = None
    try:
        if args.private_kafka:
            kafka = start_kafka(work)
        bootstrap = f"127.0.0.1:{kafka.port}" if kafka is not None else None
        lodestar = Lodestar(work / "data", bootstrap)
        print(f"Lodestar on {lodestar.url} (data: {work / 'data'}); running {len(files)} test file(s)", flush=True)
        started = time.monotonic()
        run_suite(python, suite, files, lodestar, bootstrap, work / "junit.xml")
        elapsed = time.monotonic() - started
    finally:
        if lodestar is not None:
            lodestar.stop()
        if kafka is not None:
            kafka.run("stop")
    results = outcomes(work / "junit.xml")
    total = report(results)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"suite": str(suite), "files": files, "excluded": EXCLUDED,
                                          "seconds": round(elapsed), "total": dict(total), "tests": results},
                                         indent=1))
    print(f"{sum(total.values())} tests in {elapsed:.0f} s; results in {args.out}; server log in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
