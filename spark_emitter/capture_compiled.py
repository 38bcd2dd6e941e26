"""`PlanReader` inside the JVM: `PlanCapture.java`, compiled by the driver JVM's own compiler the
first time a listener attaches (cached under ~/.cache/lodestar/spark, per source, Spark and Java
version) and loaded beside Spark's classes. One Py4J round trip per finished action on Spark's
listener thread, whatever it reads: the reading is done by the class's own JVM thread, and the
listener's worker thread takes the result."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from py4j.java_gateway import JavaClass

from spark_emitter.capture import QUERY_FIELD, V2_WRITES, WRITES, PendingPlan, Plan, PlanReader

log = logging.getLogger(__name__)
CLASS_NAME = "lodestar.spark.PlanCapture"
SOURCE = "PlanCapture.java"
_LOADED: dict[int, tuple[Any, Any]] = {}  # id(gateway) -> (gateway, PlanCapture class)


class CompileError(Exception):
    """The driver JVM cannot compile PlanCapture.java (no compiler in it, or the compiler refused)."""


class CompiledPlanReader(PlanReader):
    """Hands each finished write to a PlanCapture in the JVM, which reads its plan and facts on a
    thread of its own into a file of the reader's directory."""

    def __init__(self, jvm: Any, gateway: Any, spark_classes: Any):
        """`spark_classes`: a JVM ClassLoader that sees Spark's classes."""
        constructor = _loaded(jvm, gateway, spark_classes).getConstructors()[0]  # (may fail: no file made yet)
        super().__init__()
        arguments = [str(self.directory), *(_array(gateway, jvm.String, sorted(names))
                                            for names in (WRITES, V2_WRITES, QUERY_FIELD))]
        self._capture = constructor.newInstance(_array(gateway, jvm.Object, arguments))

    def start(self, execution: Any) -> Ticket | None:
        ticket = self._capture.submit(execution)
        return None if ticket < 0 else Ticket(self._capture, ticket)

    def close(self) -> None:
        self._capture.close()
        super().close()


class Ticket(PendingPlan):
    """A write handed to the JVM's capture thread."""

    def __init__(self, capture: Any, ticket: int):
        self._capture, self._ticket = capture, ticket

    def result(self) -> Plan:
        path = Path(self._capture.take(self._ticket))
        try:
            read = orjson.loads(path.read_bytes())
        finally:
            path.unlink(missing_ok=True)
        facts = read["facts"]
        return Plan(facts["command"], facts["executionId"], read["plan"], facts["write"],
                    {int(expr_id): relation for expr_id, relation in facts["relations"].items()})

    def discard(self) -> None:
        self._capture.discard(self._ticket)


def _loaded(jvm: Any, gateway: Any, spark_classes: Any) -> Any:
    """The PlanCapture class of this gateway's JVM, loaded once: Py4J remembers a method by its
    class's name, so a second class of that name (from another loader) would fail its calls."""
    loaded = _LOADED.get(id(gateway))
    if loaded is None or loaded[0] is not gateway:
        loader = jvm.java.net.URLClassLoader(_array(gateway, jvm.java.net.URL, [
            jvm.java.io.File(str(compiled(jvm, gateway))).toURI().toURL()]), spark_classes)
        loaded = _LOADED[id(gateway)] = (gateway, loader.loadClass(CLASS_NAME))
    return loaded[1]


def compiled(jvm: Any, gateway: Any) -> Path:
    """The directory of PlanCapture's compiled class for this JVM; compiled there when missing."""
    source = resources.files("spark_emitter").joinpath(SOURCE).read_bytes()
    versions = f"{jvm.org.apache.spark.package.SPARK_VERSION()} {jvm.System.getProperty('java.version')}"
    key = hashlib.sha256(source + versions.encode()).hexdigest()[:16]
    target = _cache_root() / f"plan-capture-{key}"
    if (target / (CLASS_NAME.replace(".", "/") + ".class")).exists():
        return target
    javac = jvm.com.sun.tools.javac.Main  # (javax.tools' compiler is not callable through Py4J)
    if not isinstance(javac, JavaClass):
        raise CompileError(f"the driver JVM ({jvm.System.getProperty('java.home')}) has no Java compiler (a JRE)")
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
    try:
        (building / SOURCE).write_bytes(source)
        errors = jvm.java.io.StringWriter()
        options = ["-nowarn", "-Xlint:none", "-proc:none", "-cp", jvm.System.getProperty("java.class.path"),
                   "-d", str(building), str(building / SOURCE)]
        if javac.compile(_array(gateway, jvm.String, options), jvm.java.io.PrintWriter(errors)) != 0:
            raise CompileError(f"javac refused {SOURCE}: {errors.toString()[-2000:]}")
        try:
            os.rename(building, target)
        except OSError:  # another process compiled it meanwhile
            if not target.exists():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lodestar" / "spark"


def _array(gateway: Any, java_class: Any, values: list[Any]) -> Any:
    array = gateway.new_array(java_class, len(values))
    for i, value in enumerate(values):
        array[i] = value
    return array
