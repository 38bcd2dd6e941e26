"""`lodestar pipeline validate|run|list-plugins`: CDAP-style data pipelines on PySpark
(spark_emitter.pipeline; docs/pipelines.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from lodestar.cli.common import CliError, client_of


def register(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    pipeline = sub.add_parser("pipeline", help="validate and run CDAP-style data pipelines on PySpark")
    commands = pipeline.add_subparsers(dest="pipeline_command", required=True)

    validate = commands.add_parser("validate", help="check a pipeline file (unresolved macros are accepted)")
    validate.add_argument("file", metavar="FILE")
    validate.add_argument("--arg", action="append", default=[], metavar="K=V",
                          help="a runtime argument: with any given, every macro must have a value")
    validate.set_defaults(func=cmd_validate)

    run = commands.add_parser("run", help="run a pipeline on Spark and record it in Lodestar")
    run.add_argument("file", metavar="FILE")
    run.add_argument("--arg", action="append", default=[], metavar="K=V", help="a runtime argument (macro value)")
    run.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    run.add_argument("--namespace", default="default", help="CDAP namespace of the pipeline (default: default)")
    run.add_argument("--env", default="PROD", help="environment of the datasets' URNs (default PROD)")
    run.add_argument("--listener", action="store_true",
                     help="also attach the Lodestar listener (lineage of every Spark write)")
    client_options(run)
    run.set_defaults(func=cmd_run)

    plugins = commands.add_parser("list-plugins", help="the built-in plugins and their properties")
    plugins.set_defaults(func=cmd_list_plugins)


def _arguments(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, found, value = pair.partition("=")
        if not found or not key:
            raise CliError(f"--arg {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _load(path: str) -> Any:
    from spark_emitter.pipeline import PipelineError, load

    folder = os.path.dirname(os.path.abspath(path))  # custom plugins' modules may sit beside the file
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        return load(path)
    except OSError as err:
        raise CliError(f"{path}: {err.strerror or err}") from None
    except PipelineError as err:
        _print_errors(path, err.errors)
        raise SystemExit(1) from None


def _print_errors(path: str, errors: list[str]) -> None:
    print(f"{path}: {len(errors)} problem{'s' if len(errors) != 1 else ''}", file=sys.stderr)
    for error in errors:
        print(f"  - {error}", file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    from spark_emitter.pipeline import check

    pipeline = _load(args.file)
    errors = check(pipeline, _arguments(args.arg) if args.arg else None)
    if errors:
        _print_errors(args.file, errors)
        return 1
    macros = sorted(pipeline.macros())
    print(f"{args.file}: pipeline {pipeline.name!r} is valid ({len(pipeline.stages)} stages, "
          f"{len(pipeline.connections)} connections" + (f"; macros: {', '.join(macros)}" if macros else "") + ")")
    return 0


def cmd_list_plugins(args: argparse.Namespace) -> int:
    from spark_emitter.pipeline import BUILT_INS

    for name, plugin in BUILT_INS.items():
        print(f"{name} ({', '.join(plugin.types)}): {plugin.description}")
        print(f"    required: {', '.join(plugin.required) or '-'}; optional: {', '.join(plugin.optional) or '-'}")
    print('custom: "plugin": {"name": "module:Class", "type": "transform"}, a class with configure(input_fields), '
          "prepare_run(context) and transform(df), imported from the Python path or the pipeline file's directory")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from spark_emitter.pipeline import PipelineError, check, run_pipeline

    arguments = _arguments(args.arg)
    pipeline = _load(args.file)
    errors = check(pipeline, arguments)
    if errors:  # before Spark starts: nothing is recorded
        _print_errors(args.file, errors)
        return 1
    client = client_of(args)
    server, token = client.server, client._token  # found as `lodestar ingest` finds GMS
    client.close()
    console = Console(stderr=True)
    spark = _session(pipeline.name, args.master)
    listener = None
    try:
        if args.listener:
            from spark_emitter import attach

            listener = attach(spark, server=server, token=token, env=args.env)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.fields[state]}"),
                      TimeElapsedColumn(), console=console, transient=False) as progress:
            tasks = {s.name: progress.add_task(f"{s.name} ({s.plugin.name})", total=1, state="waiting")
                     for s in pipeline.stages}

            def on_stage(stage: Any) -> None:
                progress.update(tasks[stage.name], state=stage.status,
                                completed=1 if stage.status in ("done", "failed") else 0)

            try:
                result = run_pipeline(pipeline, spark, arguments, server=server, token=token,
                                      namespace=args.namespace, env=args.env, on_stage=on_stage)
            except PipelineError as err:
                _print_errors(args.file, err.errors)
                return 1
    finally:
        if listener is not None:
            listener.close(60)
        spark.stop()
    table = Table("stage", "plugin", "rows in", "rows out", "operations", "seconds", "status")
    for stage in result.stages:
        table.add_row(stage.name, stage.plugin, _count(stage.rows_in), _count(stage.rows_out),
                      str(stage.operations), f"{stage.seconds:.2f}", stage.status)
    out = Console()
    out.print(table)
    out.print(f"run {result.run_urn} of {result.program_urn}: {result.status} in {result.seconds:.1f}s")
    out.print(f"lineage: {len(result.operations)} field operations recorded; read {', '.join(result.reads) or '-'};"
              f" wrote {', '.join(result.writes) or '-'}")
    if result.error:
        print(f"lodestar: error: the pipeline failed: {result.error}", file=sys.stderr)
        return 1
    return 0


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _session(name: str, master: str | None) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(name).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    elif not os.environ.get("PYSPARK_GATEWAY_PORT"):  # not under spark-submit, whose master counts
        builder = builder.master("local[*]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
