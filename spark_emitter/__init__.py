"""Lineage of PySpark jobs in Lodestar: `from spark_emitter import attach; attach(spark)`; programs
that say themselves what they did: `from spark_emitter import lodestar_run`."""

from spark_emitter.listener import ListenerError, LodestarListener, Settings, attach
from spark_emitter.program import (
    EndPoint,
    InputField,
    LineageRecorder,
    ProgramRun,
    ReadOperation,
    TransformOperation,
    WriteOperation,
    lodestar_run,
)

__all__ = ["EndPoint", "InputField", "LineageRecorder", "ListenerError", "LodestarListener", "ProgramRun",
           "ReadOperation", "Settings", "TransformOperation", "WriteOperation", "attach", "lodestar_run"]
