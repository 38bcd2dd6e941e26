"""Schemathesis over a live server's /openapi.json: every operation, with data valid for its
schema (positive) and invalid (negative), each response checked: no 5xx, a documented status,
the documented content type and body schema, schema-invalid requests rejected with a 4xx.
Used by tests/api/test_hostile_input.py (a short run) and bench/reliability.py (a long one)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          negative_data_rejection]


@dataclass
class FuzzReport:
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


def fuzz(base_url: str, token: str, examples: int, seed: int | None = None) -> FuzzReport:
    """`examples` cases per operation and generation mode against the server at base_url."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    report = FuzzReport()
    headers = {"Authorization": f"Bearer {token}"}
    for result in schema.get_all_operations():
        for mode in GenerationMode:
            try:
                _runner(result.ok(), mode, headers, examples, seed is not None, report)()
            except Unsatisfiable:  # nothing of the operation can be made invalid (no parameters, no body)
                continue
    return report


def _runner(operation: Any, mode: GenerationMode, headers: dict[str, str], examples: int, derandomize: bool,
            report: FuzzReport) -> Callable[[], None]:
    label = f"{operation.label} ({mode.value})"

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    def run(case: schemathesis.Case) -> None:
        generated = case.headers or {}
        # a negative case may leave the token out on purpose (then 401 is the answer it wants)
        token = headers if mode == GenerationMode.POSITIVE or "Authorization" in generated else {}
        response = case.call(headers={**generated, **token}, timeout=60)
        report.cases += 1
        report.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, FailureGroup) as failure:
            if not _only_unknown_query_parameters(str(failure)):
                report.failures.append(f"{label}: {failure}"[:2000])

    return run


def _only_unknown_query_parameters(failure: str) -> bool:
    """A negative case whose only fault is a query parameter the operation does not name: the
    API ignores those, as HTTP APIs do, so accepting the request is right."""
    return "Schema-violating request accepted" in failure and "Invalid component: in query - violates" \
        " `additionalProperties`" in failure
