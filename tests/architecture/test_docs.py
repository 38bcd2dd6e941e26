"""Every command and route the README and docs/ name still exists.

Commands: each `lodestar <command> [<subcommand>] [--option...]` in a code span or a shell block
is checked against the CLI's own parser (`lodestar.cli.main.build_parser()`). Routes: each
`METHOD /path` in a code span or block, each bare API path in a code span (`/v1/...`,
`/v3/...`) and each URL a `curl` line calls is checked against the `/openapi.json` of a live
server, method and `?action=` included. A doc that names a command, an option or a route the
code no longer has fails here, with the page and line.

Doc notation understood: `a|b` alternatives (in a command word, a path segment or an action),
`[...]` optional parts, a trailing `...` for "this route and those below it", and `{x}` or
upper-case words as placeholders. Output blocks (fenced as `text`) are not commands.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lodestar.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Routes the server answers that are not in its OpenAPI document, each with why.
NOT_IN_OPENAPI: list[tuple[str, set[str], str]] = [
    (r"/openapi\.json", {"get"}, "the document does not list itself"),
    (r"/", {"get"}, "the web UI's page, not an API route"),
    (r"/ui/[^/]+", {"get"}, "the web UI's built files"),
    (r"/v3/namespaces/[^/]+/streams/[^/]+", {"post"},
     "CDAP stream writes (a source recorded as a writer): served, not yet in the document"),
]
API_PREFIXES = ("/v1/", "/v3/", "/api/", "/health", "/metrics", "/config", "/openapi.json", "/aspects",
                "/entities", "/ui/")
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")
MULTI_SEGMENT = {"entity"}  # {entity} in /v3/namespaces/{ns}/{entity}/metadata is CDAP's path, slashes included


@dataclass(frozen=True)
class Fragment:
    page: str
    line: int
    text: str
    block: str | None  # None for a code span, else the fence's language ("" when untagged)


def fragments(path: Path) -> Iterator[Fragment]:
    """Code blocks (whole) and code spans (per paragraph, so a span may wrap) of a Markdown page."""
    name = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    fence: str | None = None
    start, body, paragraph = 0, [], []

    def spans(paragraph: list[tuple[int, str]]) -> Iterator[Fragment]:
        text = " ".join(line for _, line in paragraph)
        for match in re.finditer(r"(`+)(.+?)\1", text):
            yield Fragment(name, paragraph[0][0], match.group(2).replace("\\|", "|").strip(), None)

    for number, line in enumerate(lines, 1):
        opening = re.match(r"\s*```\s*([\w+-]*)", line)
        if fence is None and opening:
            yield from spans(paragraph)
            fence, start, body, paragraph = opening.group(1), number, [], []
        elif fence is not None and line.strip().startswith("```"):
            yield Fragment(name, start, "\n".join(body), fence)
            fence = None
        elif fence is not None:
            body.append(line)
        elif line.strip():
            paragraph.append((number, line))
        else:
            yield from spans(paragraph)
            paragraph = []
    yield from spans(paragraph)


def all_fragments() -> list[Fragment]:
    return [fragment for page in PAGES for fragment in fragments(page)]


def strip_comment(line: str) -> str:
    """The line without a shell comment (a `#` outside quotes, at the start or after a blank)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def shell_commands(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, command) of each command in shell text: continuations joined, comments
    dropped, split at `;`, `&&`, `||`, `&` and ` | ` (a `|` inside a word is an alternative)."""
    logical: list[tuple[int, str]] = []
    for offset, line in enumerate(text.splitlines()):
        if logical and logical[-1][1].endswith("\\"):
            logical[-1] = (logical[-1][0], logical[-1][1][:-1] + " " + line)
        else:
            logical.append((offset, line))
    for offset, line in logical:
        for command in re.split(r"\s*(?:;|&&|\|\||&(?!&)|\s\|\s)\s*", strip_comment(line)):
            if command.strip():
                yield offset, command.strip()


# --- commands ----------------------------------------------------------------------------------

def words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote in a fragment: plain words are good enough here
        return command.split()


def lodestar_invocations(fragment: Fragment) -> Iterator[tuple[int, list[str]]]:
    """(line, words after `lodestar`) of each `lodestar ...` command in the fragment."""
    if fragment.block is not None and fragment.block not in ("", "sh", "bash", "shell", "console"):
        return  # output, Python, JSON: not commands
    for offset, command in shell_commands(fragment.text):
        tokens = words(command)
        if tokens and tokens[0] == "$":
            tokens = tokens[1:]
        while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):  # VAR=value before the command
            tokens = tokens[1:]
        if len(tokens) > 1 and tokens[0].rsplit("/", 1)[-1] == "lodestar":
            yield fragment.line + offset + (1 if fragment.block is not None else 0), tokens[1:]


def placeholder(word: str) -> bool:
    return word.startswith(("<", "[", "{", "-")) or word.isupper() or "=" in word


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def positional_choices(parser: argparse.ArgumentParser) -> set[str] | None:
    """The choices of the parser's first positional argument, if it has any."""
    for action in parser._actions:
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            return set(action.choices) if action.choices else None
    return None


def command_problems(args: list[str], root: argparse.ArgumentParser) -> list[str]:
    """What of `lodestar <args>` the parser does not know: commands, subcommands, options."""
    if placeholder(args[0]):
        return []
    problems: list[str] = []
    for name in args[0].split("|"):
        parser = subparsers(root).get(name)
        if parser is None:
            problems.append(f"no command `lodestar {name}`")
            continue
        parsers = [(f"lodestar {name}", parser)]
        nested, choices = subparsers(parser), positional_choices(parser)
        if len(args) > 1 and not placeholder(args[1]) and (nested or choices):
            parsers = []
            for sub in args[1].split("|"):
                if nested and sub in nested:
                    parsers.append((f"lodestar {name} {sub}", nested[sub]))
                elif choices and sub in choices:
                    parsers.append((f"lodestar {name} {sub}", parser))
                else:
                    problems.append(f"`lodestar {name}` has no subcommand {sub!r}")
        options = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", " ".join(args[1:])))
        for label, p in parsers:
            known = {option for action in p._actions for option in action.option_strings}
            problems += [f"`{label}` has no option {option}" for option in sorted(options - known)]
    return problems


def test_every_command_in_the_docs_exists() -> None:
    parser = build_parser()
    checked, problems = 0, []
    for fragment in all_fragments():
        for line, args in lodestar_invocations(fragment):
            checked += 1
            problems += [f"{fragment.page}:{line}: {p}" for p in command_problems(args, parser)]
    assert not problems, "commands the docs name that the CLI lacks:\n" + "\n".join(problems)
    assert checked > 50, f"only {checked} commands found in the docs: is the extraction broken?"


# --- routes ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Route:
    method: str | None  # lower case; None: any
    path: str
    action: str | None  # the `?action=` of a Rest.li route
    below: bool  # a trailing `...`: the path or a route below it


def expand(text: str) -> Iterator[str]:
    """Every form of `text` with `[...]` optional parts (without nesting) left out or in."""
    parts = re.split(r"(\[[^\[\]]*\])", text)
    options = [[part[1:-1], ""] if part.startswith("[") and part.endswith("]") else [part] for part in parts]
    for combination in itertools.product(*options):
        yield "".join(combination)


def routes_of(method: str | None, raw: str) -> Iterator[Route]:
    """The routes a doc's notation names: alternatives and optional parts expanded."""
    raw = raw.rstrip(",;:)")
    for form in expand(raw):
        below = form.endswith("...")
        form = form.removesuffix("...")
        path, _, query = form.partition("?")
        actions = re.search(r"(?:^|&)action=([\w|]+)", query)
        segments = [segment.split("|") for segment in path.split("/")]
        for choice in itertools.product(*segments):
            for action in actions.group(1).split("|") if actions else [None]:
                yield Route(method.lower() if method else None, "/".join(choice) or "/", action, below)


def routes_in(fragment: Fragment) -> Iterator[tuple[int, Route]]:
    if fragment.block in ("python", "json"):
        return
    line_of = (lambda offset: fragment.line + offset + 1) if fragment.block is not None else (lambda _: fragment.line)
    named = re.compile(r"\b(" + "|".join(METHODS) + r")\s+(/[^\s`'\"<>]*)")
    for offset, line in enumerate(fragment.text.splitlines()):
        for match in named.finditer(line):
            for route in routes_of(match.group(1), match.group(2)):
                yield line_of(offset), route
    if fragment.block is None:
        text = fragment.text
        if text.startswith(API_PREFIXES) and " " not in text:
            yield from ((fragment.line, route) for route in routes_of(None, text))
        return
    variables = dict(re.findall(r"(?:^|[\s;])([A-Za-z_]\w*)=([^\s;'\"]+)", fragment.text))
    for offset, command in shell_commands(fragment.text):
        if not command.startswith("curl "):
            continue
        command = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), command)
        method = re.search(r"-X\s*([A-Z]+)", command)
        data = re.search(r"\s(?:-d|--data\S*)\s", command)
        for url in re.findall(r"(?:https?://)?(?:localhost|127\.0\.0\.1)(?::\d+)?(/[^\s'\"]*)", command):
            verb = method.group(1) if method else ("POST" if data else "GET")
            yield line_of(offset), Route(verb.lower(), url.partition("?")[0], None, False)
            if "action=" in url:
                yield from ((line_of(offset), r) for r in routes_of(verb, url))


def template(path: str) -> str:
    """A regular expression of an OpenAPI path: `{x}` one segment, a multi-segment one any number."""
    pattern = ""
    for segment in path.strip("/").split("/"):
        name = re.fullmatch(r"{(\w+)}", segment)
        if name and name.group(1) in MULTI_SEGMENT:
            pattern += r"(?:/[^/]+)*"
        elif name:
            pattern += r"/[^/]+"
        elif segment:
            pattern += "/" + re.escape(segment)
    return pattern or "/"


def action_enum(operation: dict[str, Any]) -> set[str]:
    for parameter in operation.get("parameters", []):
        if parameter.get("name") == "action" and parameter.get("in") == "query":
            return set(parameter.get("schema", {}).get("enum", []))
    return set()


def route_problem(route: Route, document: dict[str, Any]) -> str | None:
    methods_of: list[dict[str, Any]] = []
    for path, operations in document["paths"].items():
        segments = path.strip("/").split("/")
        prefixes = range(1, len(segments) + 1) if route.below else [len(segments)]
        for k in prefixes:
            if re.fullmatch(template("/".join(segments[:k])), route.path):
                methods_of.append(operations)
                break
    for pattern, methods, _reason in NOT_IN_OPENAPI:
        if re.fullmatch(pattern, route.path) and (route.method is None or route.method in methods):
            return None
    name = f"{(route.method or '').upper()} {route.path}{'?action=' + route.action if route.action else ''}"
    if not methods_of:
        return f"no route {route.path} in /openapi.json"
    candidates = [ops[route.method] for ops in methods_of if route.method in ops] if route.method else \
        [op for ops in methods_of for key, op in ops.items() if key in {m.lower() for m in METHODS}]
    if not candidates:
        return f"{name}: the path exists, the method does not"
    if route.action and not any(route.action in action_enum(op) for op in candidates):
        return f"{name}: no such action"
    return None


@pytest.fixture
def openapi(server: Any) -> dict[str, Any]:
    """The OpenAPI document of a live server (tests/conftest.py), as a client reads it."""
    with urllib.request.urlopen(server.url + "/openapi.json", timeout=30) as answer:
        return json.load(answer)


def test_every_route_in_the_docs_exists(openapi: dict[str, Any]) -> None:
    checked, problems = 0, []
    for fragment in all_fragments():
        for line, route in routes_in(fragment):
            checked += 1
            problem = route_problem(route, openapi)
            if problem:
                problems.append(f"{fragment.page}:{line}: {problem}")
    assert not problems, "routes the docs name that the server lacks:\n" + "\n".join(sorted(set(problems)))
    assert checked > 80, f"only {checked} routes found in the docs: is the extraction broken?"


def test_the_readme_names_the_test_command() -> None:
    """CI runs the README's test command; the README must keep naming it."""
    assert "bin/test" in (ROOT / "README.md").read_text()
