"""CDAP-style data pipelines on PySpark: a pipeline file (`model`), its checks (`validate`), the
plugins (`plugins`) and the runner that records a run's field operations (`runner`)."""

from spark_emitter.pipeline.model import Pipeline, PipelineError, load, parse
from spark_emitter.pipeline.plugins import (
    BUILT_INS,
    FieldRead,
    FieldTransform,
    FieldWrite,
    Plugin,
    PluginError,
    StageContext,
)
from spark_emitter.pipeline.runner import RunResult, StageResult, run_pipeline
from spark_emitter.pipeline.validate import check, validated

__all__ = ["BUILT_INS", "FieldRead", "FieldTransform", "FieldWrite", "Pipeline", "PipelineError", "Plugin",
           "PluginError", "RunResult", "StageContext", "StageResult", "check", "load", "parse", "run_pipeline",
           "validated"]
