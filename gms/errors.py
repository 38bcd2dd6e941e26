"""The failure of one proposal, with the HTTP status it maps to."""

from __future__ import annotations

from typing import Any


class ProposalFailed(Exception):
    """A proposal that was not applied: a code, a message naming the problem and field,
    and for failed preconditions the expected and actual states."""

    def __init__(self, code: str, message: str, http_status: int = 400,
                 expected: str | None = None, actual: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status
        self.expected = expected
        self.actual = actual

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.expected is not None:
            body["expected"] = self.expected
            body["actual"] = self.actual
        return body
