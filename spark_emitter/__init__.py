"""Lineage of PySpark jobs in Lodestar: `from spark_emitter import attach; attach(spark)`."""

from spark_emitter.listener import ListenerError, LodestarListener, Settings, attach

__all__ = ["LodestarListener", "ListenerError", "Settings", "attach"]
