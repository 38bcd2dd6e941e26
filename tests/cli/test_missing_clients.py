"""A setting whose adapter's client library is not installed: one line naming the setting, the
extra and the install command, exit 2, before any process is forked; never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.server import free_port

# `lodestar` with some modules made unimportable, as in an installation without their extra.
WITHOUT = ("import sys; sys.modules.update(dict.fromkeys({blocked!r}));"
           " from lodestar.cli.main import main; sys.exit(main())")


def lodestar_without(blocked: list[str], *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT.format(blocked=blocked), *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})


@pytest.mark.parametrize(("blocked", "env", "expected"), [
    (["confluent_kafka"], {"LODESTAR_EVENT_LOG": "kafka"},
     "event_log: kafka needs the confluent_kafka client, which is not installed: pip install 'lodestar[kafka]'"),
    (["cassandra"], {"LODESTAR_ASPECT_STORE": "cassandra"},
     "aspect_store: cassandra needs the cassandra client, which is not installed: pip install 'lodestar[cassandra]'"),
    (["opensearchpy"], {"LODESTAR_READ_MODELS": "distributed"}, "read_models: distributed needs the opensearchpy"
     " client, which is not installed: pip install 'lodestar[opensearch]'"),
])
def test_serve_with_workers_names_the_missing_extra_and_exits_2_before_forking(tmp_path, blocked, env, expected):
    done = lodestar_without(blocked, "serve", "--workers", "2", "--data-dir", str(tmp_path), "--port",
                            str(free_port()), env=env)
    assert (done.returncode, done.stderr) == (2, f"lodestar: error: {expected}\n")
    assert "Lodestar GMS on" not in done.stdout  # nothing started
    assert not (tmp_path / "metrics").exists()  # no process was forked (serve --workers makes it first)


@pytest.mark.parametrize("command", [["gms"], ["mcl-processor"], ["check"], ["restore-indices"], ["tail"]])
def test_every_command_that_opens_an_adapter_says_the_same(tmp_path, command):
    done = lodestar_without(["confluent_kafka"], *command, "--data-dir", str(tmp_path),
                            env={"LODESTAR_EVENT_LOG": "kafka"})
    assert done.returncode == 2, done.stderr
    assert "pip install 'lodestar[kafka]'" in done.stderr and "Traceback" not in done.stderr


def test_two_missing_clients_are_both_named(tmp_path):
    done = lodestar_without(["confluent_kafka", "cassandra"], "mcl-processor", "--data-dir", str(tmp_path),
                            env={"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_ASPECT_STORE": "cassandra"})
    assert done.returncode == 2
    assert "lodestar[kafka]" in done.stderr and "lodestar[cassandra]" in done.stderr
