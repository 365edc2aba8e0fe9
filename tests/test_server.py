"""`pkg serve` end to end: the MCP SDK's own client talks to the real server over stdio and over
Streamable HTTP, on a database built by the real `pkg build`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from ingest.link import RESOLUTIONS
from pkg.embedders import CachedEmbedder
from pkg.errors import ConfigError
from pkg.server import BearerTokenGuard, StageProgress, is_loopback, parse_bind
from pkg.stores.embedded import EmbeddedStore
from pkg.stores.neo4j_store import Neo4jStore
from retrieval.lexical import UNITS
from retrieval.search import MODES, Neighbour
from tests.conftest import FIXTURES, cli_build, run_cli
from tests.helpers import build
from tests.neo4j_server import free_port

TOOLS = {
    *("search", "get_function", "get_context", "context_at", "search_docs"),
    *("callers", "callees", "file_outline", "stats", "index"),
}
NEW_FUNCTION = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
#: A file added to the copy of the fixture corpus, where one function calls the other.
GREETINGS = (
    'def greet(name):\n    return "Hello, " + name + "!"\n\n\n'
    'def greet_everyone(names):\n    return "\\n".join(greet(name) for name in names)\n'
)
#: A file of more than one chunk (cAST chunks hold 2,000 non-blank bytes) and no function or block.
FACTORS = '"""Conversion factors between units of length."""\n\n' + "".join(
    f"FACTOR_{i} = {i} * 0.3048  # feet to metres, times {i}\n" for i in range(1, 80)
)


# -- unit tests of the pieces that need no server -----------------------------------------------------------
def test_bind_addresses_are_parsed_and_checked() -> None:
    assert parse_bind("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_bind("[::1]:80") == ("::1", 80)
    for wrong in ("8765", "host:", "host:99999", "host:0"):
        with pytest.raises(ConfigError, match="HOST:PORT"):
            parse_bind(wrong)
    hosts = ("127.0.0.1", "127.8.0.1", "::1", "localhost", "0.0.0.0", "10.0.0.1", "example.org")
    assert [is_loopback(h) for h in hosts] == [True, True, True, True, False, False, False]


def test_build_stages_become_one_increasing_progress() -> None:
    sent: list[tuple[float, str]] = []
    progress = StageProgress(lambda value, message: sent.append((value, message)))
    for stage, total in (("parse", 3), ("embed", 40), ("write", 2)):
        for done in range(total + 1):
            progress(stage, done, total)
    values = [value for value, _ in sent]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert sent[-1] == (45.0, "write 2/2")
    assert len([m for _, m in sent if m.startswith("embed")]) <= 12  # a tenth of a stage at a time


# -- a real server over stdio and over HTTP -----------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    root: Path  # the folder `index` may read, holding a copy of the fixture corpus
    db: Path
    env: dict[str, str]
    nodes: dict[str, int]  # node counts per label, as `pkg stats` reports them


def _nodes(db: Path) -> dict[str, int]:
    done = run_cli("stats", "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)["nodes"])


def _build(folder: Path, env: dict[str, str], long_file: bool = False) -> Built:
    """A copy of the fixture corpus and greetings.py (and, with long_file, factors.py) under folder/root,
    built by the real `pkg build` into folder/db."""
    root, db = folder / "root", folder / "db"
    shutil.copytree(FIXTURES / "corpus", root / "corpus", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "corpus" / "greetings.py").write_text(GREETINGS)
    if long_file:
        (root / "corpus" / "factors.py").write_text(FACTORS)
    cli_build(db, env, str(root / "corpus"))
    built = Built(root, db, env, _nodes(db))
    assert (built.nodes["NAME"], built.nodes["BLOCK"]) == (9, 10)  # tests/test_cli.py checks the fixture's
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Built:
    return _build(tmp_path_factory.mktemp("served"), env, long_file=True)


def _serve_args(built: Built, *extra: str, root: bool = True) -> list[str]:
    return ["-m", "pkg", "serve", "--db", str(built.db), *(["--root", str(built.root)] if root else []), *extra]


def _text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return result.structured_content


async def _refused(client: Client, tool: str, arguments: dict[str, Any], expected: str) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    message = _text(result)
    assert expected in message and "\n" not in message and "Traceback" not in message, message


async def _answers(client: Client, tool: str, arguments: dict[str, Any], expected: str) -> None:
    """The call is refused with exactly the expected sentence."""
    result = await client.call_tool(tool, arguments)
    assert (result.is_error, _text(result)) == (True, expected), arguments


async def _every_tool(client: Client, built: Built) -> None:
    """Lists the tools and calls each one, checking its answer against the fixture corpus."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert all(tool.description and len(tool.description) > 40 for tool in tools.values())
    search_schema = tools["search"].input_schema
    assert search_schema["properties"]["mode"]["enum"] == list(MODES)
    assert search_schema["properties"]["k"]["minimum"] == 1
    assert search_schema["required"] == ["text"]
    assert search_schema["properties"]["hybrid_unit"]["enum"] == list(UNITS)
    assert search_schema["properties"]["neighbour"]["enum"] == [n.value for n in Neighbour]
    assert tools["index"].input_schema["required"] == ["paths"]
    assert tools["callers"].input_schema["required"] == ["name"]
    assert tools["callees"].input_schema["properties"]["limit"]["minimum"] == 1
    assert tools["callers"].input_schema["properties"]["resolutions"]["items"]["enum"] == list(RESOLUTIONS)
    assert tools["file_outline"].input_schema["required"] == ["path"]

    found = await _ok(client, "search", {"text": "area of a circle from its radius", "k": 2})
    assert found["results"][0]["name"] == "Circle.area" and "math.pi" in found["results"][0]["text"]
    lexical = await _ok(client, "search", {"text": "fibonacci", "mode": "bm25-func", "k": 1})
    assert lexical["results"][0]["name"] == "fibonacci"
    budget = await _ok(client, "search", {"text": "read the lines of a file", "k": 3, "max_tokens": 12})
    assert budget["truncated"] and len(budget["results"]) == 1
    await _hybrid_units(client)

    function = (await _ok(client, "get_function", {"name": "read_lines", "path": "pkgdemo/shapes.py"}))["functions"]
    assert [f["name"] for f in function] == ["read_lines"]
    assert function[0]["impl"].startswith("def read_lines(path):")
    assert [(b["kind"], b["lines"]) for b in function[0]["blocks"]] == [("with", [24, 27])]
    in_file = (await _ok(client, "get_function", {"path": "alpaca.jsonl"}))["functions"]
    assert [f["name"] for f in in_file] == ["is_prime", "reverse_words"]

    context = await _ok(client, "get_context", {"task": "yield the non-empty lines of a text file", "max_tokens": 400})
    assert context["items"][0].startswith("read_lines (") and "<context>" in context["context"]
    assert 0 < context["tokens"] <= 400
    small = await _ok(client, "get_context", {"task": "yield the non-empty lines of a text file", "max_tokens": 40})
    assert small["truncated"] and small["tokens"] <= 40

    await _definitions(client, built)

    docs = (await _ok(client, "search_docs", {"text": "check whether a number is prime", "k": 2}))["results"]
    assert docs[0]["source"].endswith("alpaca.jsonl") and "prime" in docs[0]["text"]

    await _call_graph(client, built)

    stats = await _ok(client, "stats", {})
    assert stats["nodes"] == built.nodes and stats["embedder"] == {"name": "st:all-MiniLM-L6-v2", "dim": 384}
    assert stats["roots"] == [str(built.root.resolve())]


async def _definitions(client: Client, built: Built) -> None:
    """context_at: the definitions that code being written (never indexed) uses from the corpus's files;
    the same as `pkg context --format json` for an indexed file; nothing for code needing nothing."""
    shapes = str((built.root / "corpus" / "pkgdemo" / "shapes.py").resolve())
    code = "from shapes import Circle, fibonacci\n\n\ndef ring(r):\n    return Circle(r).area() - fibonacci(3)\n"
    new_file = str(built.root / "corpus" / "pkgdemo" / "ring.py")
    found = await _ok(client, "context_at", {"path": new_file, "code": code, "line": 5})
    assert {(d["name"], d["kind"], d["path"]) for d in found["definitions"]} == {
        ("Circle", "class", shapes),
        ("fibonacci", "function", shapes),
    }
    assert (
        found["gated"] is None
        and found["text"].startswith("# pkgdemo/shapes.py\n")
        and "def area(self)" in found["text"]
    )
    assert "math.pi" not in found["text"]  # stubs, not bodies
    greetings = str((built.root / "corpus" / "greetings.py").resolve())
    same = await _ok(client, "context_at", {"path": greetings, "gate": "always"})
    done = run_cli(
        "context", greetings, "--db", str(built.db), "--gate", "always", "--format", "json", env_extra=built.env
    )
    assert done.returncode == 0, done.stderr
    assert same == json.loads(done.stdout)
    gated = await _ok(client, "context_at", {"path": new_file, "code": "def f(x):\n    return len(x)\n"})
    assert gated["definitions"] == [] and "own file" in gated["gated"]
    # a draft of ring's body that misspells fibonacci: listed with the real one, whose stub leads the context
    code_only = code.rsplit("    return", 1)[0]
    draft = "return Circle(r).area() - fibonaci(3)\n"
    checked = await client.call_tool("context_at", {"path": new_file, "code": code_only, "line": 4, "draft": draft})
    assert not checked.is_error and checked.structured_content is not None, _text(checked)
    assert checked.structured_content["invented"] == [
        {"name": "fibonaci", "suggestions": [{"name": "fibonacci", "path": shapes, "line": 16}]}
    ]
    assert _text(checked).startswith("invented: fibonaci (like fibonacci at ") and "def fibonacci(n)" in _text(checked)
    # then code of other files like the code and the draft (the corpus is built with chunks), unless similar is 0
    similar = checked.structured_content["similar"]
    assert similar and new_file not in {s["path"] for s in similar} and similar[-1]["code"] in _text(checked)
    without = {"path": new_file, "code": code_only, "line": 4, "draft": draft, "similar": 0}
    alone = await _ok(client, "context_at", without)
    assert alone["similar"] == [] and alone["invented"] == checked.structured_content["invented"]
    real = await _ok(
        client, "context_at", {"path": new_file, "code": code_only, "line": 4, "draft": "return Circle(r).area()\n"}
    )
    assert real["invented"] == [] and real["definitions"] == [] and "draft names only" in real["gated"]
    await _refused(client, "context_at", {"path": "../outside.py"}, "outside the allowed roots")


async def _hybrid_units(client: Client) -> None:
    """hybrid_unit reaches the search as `pkg query --hybrid-unit` passes it."""
    for unit, kind in (("func", "IMPL"), ("rows", "ROW"), ("chunk", "CHUNK")):
        found = await _ok(client, "search", {"text": "fibonacci", "mode": "hybrid", "hybrid_unit": unit, "k": 1})
        assert found["results"][0]["kind"] == kind, unit


async def _neighbours(client: Client) -> None:
    """neighbour reaches the search as `pkg query --neighbour` passes it: the first chunk of factors.py
    comes with the one after it."""
    ask = {"text": "conversion factors between units of length", "mode": "bm25-chunk", "k": 1}
    [plain] = (await _ok(client, "search", ask))["results"]
    assert plain["path"].endswith("factors.py") and plain["lines"][0] == 1
    [both] = (await _ok(client, "search", ask | {"neighbour": "next"}))["results"]
    assert (both["id"], both["lines"][0]) == (plain["id"], plain["lines"][0]) and both["lines"][1] > plain["lines"][1]
    assert both["text"].startswith(plain["text"]) and len(both["text"]) > len(plain["text"])


async def _call_graph(client: Client, built: Built) -> None:
    """callers, callees and file_outline answer what `pkg graph ... --format json` prints."""
    greetings = str((built.root / "corpus" / "greetings.py").resolve())
    for tool, name in (("callers", "greet"), ("callees", "greet_everyone")):
        answer = (await _ok(client, tool, {"name": name}))["functions"]
        done = run_cli("graph", tool, name, "--db", str(built.db), "--format", "json", env_extra=built.env)
        assert done.returncode == 0, done.stderr
        assert answer == json.loads(done.stdout)
    [greet] = (await _ok(client, "callers", {"name": "greet"}))["functions"]
    assert (greet["name"], greet["source"]) == ("greet", greetings)
    assert [(c["name"], c["line"], c["resolution"]) for c in greet["callers"]] == [("greet_everyone", 6, "local")]
    [everyone] = (await _ok(client, "callees", {"name": "greet_everyone"}))["functions"]
    assert [c["name"] for c in everyone["callees"]] == ["greet"]
    local = await _ok(client, "callees", {"name": "greet_everyone", "resolutions": ["local"]})
    assert [c["name"] for f in local["functions"] for c in f["callees"]] == ["greet"]
    imported = await _ok(client, "callees", {"name": "greet_everyone", "resolutions": ["import", "name-only"]})
    assert [(f["callees"], f["filtered_out"]) for f in imported["functions"]] == [([], 1)]  # greet is local
    assert [f["callees"] for f in (await _ok(client, "callees", {"name": "greet"}))["functions"]] == [[]]
    assert (await _ok(client, "callers", {"name": "no_such_function"}))["functions"] == []
    circle = await _ok(client, "callees", {"name": "area", "limit": 1})
    assert [f["name"] for f in circle["functions"]] == ["Circle.area"]

    outline = await _ok(client, "file_outline", {"path": "corpus/pkgdemo/shapes.py"})
    assert outline["path"] == str((built.root / "corpus" / "pkgdemo" / "shapes.py").resolve())
    assert [(row["depth"], row["label"], row["name"]) for row in outline["outline"][1:]] == [
        (1, "CLASS", "Circle"),
        (2, "NAME", "Circle.__init__"),
        (2, "NAME", "Circle.area"),
        (1, "NAME", "fibonacci"),
        (1, "NAME", "read_lines"),
        (1, "NAME", "fetch_all"),
    ]
    same = await _ok(client, "file_outline", {"path": greetings})
    done = run_cli("graph", "file", greetings, "--db", str(built.db), "--format", "json", env_extra=built.env)
    assert same["outline"] == json.loads(done.stdout)


async def _bad_input_then_serving(client: Client, built: Built) -> None:
    await _refused(client, "search", {"text": "sort a list", "mode": "nope"}, "unknown mode 'nope'")
    await _refused(client, "search", {"text": "sort a list", "k": 0}, "k must be at least 1")
    await _refused(client, "search", {"text": "   "}, "the query is empty")
    await _refused(client, "get_context", {"task": "sort", "max_tokens": 0}, "max_tokens must be at least 1")
    await _refused(client, "get_function", {}, "give a function name, a path, or both")
    await _refused(client, "get_function", {"name": "no_such_function"}, "no function matches name 'no_such_function'")
    await _refused(client, "index", {"paths": [str(built.root.parent)]}, "outside the allowed roots")
    await _refused(client, "index", {"paths": ["../.."]}, "outside the allowed roots")
    await _refused(client, "index", {"paths": ["missing.py"]}, "does not exist")
    await _refused(client, "callers", {"name": "  "}, "give a function name")
    await _refused(client, "callees", {"name": "greet", "limit": 0}, "limit must be at least 1")
    await _refused(client, "callers", {"name": "greet", "resolutions": ["certain"]}, "unknown resolution 'certain'")
    await _refused(client, "file_outline", {"path": ""}, "give a file path")
    await _refused(client, "file_outline", {"path": "../../etc/passwd"}, "outside the allowed roots")
    await _refused(client, "file_outline", {"path": "corpus/alpaca.jsonl"}, "no code file 'corpus/alpaca.jsonl'")
    await _arguments_checked(client)
    still = await _ok(client, "search", {"text": "fibonacci numbers", "k": 1})
    assert still["results"][0]["name"] == "fibonacci"


async def _arguments_checked(client: Client) -> None:
    """Arguments of the wrong type, missing or unknown get one sentence naming them, for every tool."""
    await _answers(client, "search", {"text": "sort", "k": "three"}, 'k takes an integer of at least 1, not "three"')
    await _answers(client, "search", {"text": "sort", "k": 2.5}, "k takes an integer of at least 1, not 2.5")
    await _answers(client, "search", {"text": 123}, "text takes a string, not 123")
    await _answers(client, "search", {"k": 2}, "text is required: a string")
    await _answers(client, "stats", {"k": 2}, "stats has no argument k; it takes no arguments")
    await _answers(
        client,
        "search",
        {"text": "sort", "max_tokens": "x"},
        'max_tokens takes an integer of at least 1 (or null), not "x"',
    )
    await _answers(client, "search", {"text": "sort", "prune": [1]}, "prune takes true or false, not [1]")
    await _answers(client, "index", {"paths": "corpus"}, 'paths takes a list of strings, not "corpus"')
    await _answers(
        client,
        "get_context",
        {"task": 1, "k": "x"},
        'task takes a string, not 1; k takes an integer of at least 1, not "x"',
    )
    await _answers(
        client,
        "search",
        {"text": "sort", "hybrid_unit": "file"},
        "unknown hybrid unit 'file'; use one of: rows, func, chunk",
    )
    await _answers(
        client,
        "search",
        {"text": "sort", "neighbour": "after"},
        "unknown neighbour 'after'; use one of: none, next, previous",
    )
    for tool in (await client.list_tools()).tools:
        takes = ", ".join(tool.input_schema.get("properties", {})) or "no arguments"
        await _answers(client, tool.name, {"bogus": 1}, f"{tool.name} has no argument bogus; it takes {takes}")
        await _answers(
            client, tool.name, {"bogus": 1, "k2": 2}, f"{tool.name} has no arguments bogus, k2; it takes {takes}"
        )
        for name in tool.input_schema.get("required", [])[:1]:
            result = await client.call_tool(tool.name, {})
            assert result.is_error and _text(result).startswith(f"{name} is required: "), _text(result)


async def _index_picks_up_a_new_file(client: Client, built: Built) -> None:
    (built.root / "corpus" / "convert.py").write_text(NEW_FUNCTION)
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    result = await client.call_tool("index", {"paths": ["corpus"]}, progress_callback=on_progress)
    assert not result.is_error, _text(result)
    report = result.structured_content or {}
    assert (report["files"], report["unchanged_files"], report["functions"]) == (1, 3, 1)
    values = [value for value, _, _ in updates]
    assert values and values == sorted(values)
    assert {message.split()[0] for _, _, message in updates if message} >= {"parse", "embed", "write"}
    found = (await _ok(client, "get_function", {"name": "celsius_to_fahrenheit"}))["functions"]
    assert found[0]["path"] == str((built.root / "corpus" / "convert.py").resolve())
    hit = await _ok(client, "search", {"text": "convert a temperature from celsius to fahrenheit", "k": 1})
    assert hit["results"][0]["name"] == "celsius_to_fahrenheit"
    assert (await _ok(client, "stats", {}))["nodes"]["NAME"] == built.nodes["NAME"] + 1


@pytest.mark.cli
def test_stdio_serves_every_tool_answers_bad_input_and_indexes(env: dict[str, str], tmp_path: Path) -> None:
    own = _build(tmp_path, env)
    params = StdioServerParameters(command=sys.executable, args=_serve_args(own), env=own.env)

    async def scenario() -> None:
        async with Client(params) as client:
            await _every_tool(client, own)
            await _bad_input_then_serving(client, own)
            await _index_picks_up_a_new_file(client, own)

    asyncio.run(scenario())


@dataclass(frozen=True)
class HttpServer:
    url: str
    token: str
    built: Built


@pytest.mark.cli
def test_a_database_without_a_part_says_which_part_it_lacks(env: dict[str, str], tmp_path: Path) -> None:
    """Built with --parts functions: a search of chunks or of documents is refused naming the part the build left
    out, where it answered with nothing; context_at with a draft that invents a name gives the definitions and
    a note that similar code needs chunks."""
    root, db = tmp_path / "root", tmp_path / "db"
    shutil.copytree(FIXTURES / "corpus", root / "corpus", ignore=shutil.ignore_patterns("__pycache__"))
    cli_build(db, env, str(root / "corpus"), "--parts", "functions")
    no_chunks = (
        "this database holds no CHUNK nodes: its build left out the 'chunks' part (pkg build --parts ...,chunks)"
        " or found nothing for it"
    )

    async def scenario(client: Client) -> None:
        await _refused(client, "search", {"text": "area of a circle", "mode": "chunk"}, no_chunks)
        await _refused(
            client,
            "search_docs",
            {"text": "area of a circle"},
            "no PATHVALUE nodes: its build left out the 'json' part",
        )
        code = "from shapes import Circle, fibonacci\n\n\ndef ring(r):\n"
        arguments = {"path": str(root / "corpus" / "pkgdemo" / "ring.py"), "code": code, "line": 4}
        checked = await _ok(client, "context_at", {**arguments, "draft": "return Circle(r).area() - fibonaci(3)\n"})
        assert (checked["similar"], checked["notes"]) == ([], [f"no similar code: {no_chunks}"])
        assert [d["name"] for d in checked["definitions"]][:1] == ["fibonacci"]

    async def over_stdio() -> None:
        args = ["-m", "pkg", "serve", "--db", str(db), "--root", str(root)]
        async with Client(
            StdioServerParameters(command=sys.executable, args=args, env={**os.environ, **env})
        ) as client:
            await scenario(client)

    asyncio.run(over_stdio())


def _wait_for_http(process: subprocess.Popen[str], host: str, port: int) -> None:
    deadline = time.monotonic() + 600  # loading the model: room for a busy host
    while time.monotonic() < deadline:
        if process.poll() is not None:
            errors = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"pkg serve exited with {process.returncode}: {errors}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("pkg serve did not listen within 120 s")


@contextmanager
def serving_http(own: Built, token: str, token_in_env: bool = False, root: bool = True) -> Iterator[HttpServer]:
    """`pkg serve --http` on a free loopback port for the database of `own`, its token given by flag or
    by PKG_SERVE_TOKEN, with --root own.root or (root=False) no --root and another working directory;
    stopped on exit."""
    port = free_port()
    args = ["--http", f"127.0.0.1:{port}", *([] if token_in_env else ["--token", token])]
    process = subprocess.Popen(
        [sys.executable, *_serve_args(own, *args, root=root)],
        env={**os.environ, **own.env, **({"PKG_SERVE_TOKEN": token} if token_in_env else {})},
        cwd=own.root if root else own.db,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_http(process, "127.0.0.1", port)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", token, own)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def http_server(built: Built) -> Iterator[HttpServer]:
    with serving_http(built, "s3cret-token", token_in_env=True) as server:
        yield server


def _client(server: HttpServer, token: str | None = None, scheme: str = "Bearer") -> Client:
    headers = {"Authorization": f"{scheme} {token or server.token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(server.url, http_client=http))


@pytest.mark.cli
def test_http_serves_every_tool_and_answers_bad_input(http_server: HttpServer) -> None:
    async def scenario() -> None:
        async with _client(http_server) as client:
            await _every_tool(client, http_server.built)
            await _neighbours(client)
            await _bad_input_then_serving(client, http_server.built)

    asyncio.run(scenario())


NEEDS_TOKEN = "this server needs the header Authorization: Bearer <token>"
WRONG_TOKEN = "the bearer token is wrong"


@pytest.mark.cli
def test_http_refuses_a_missing_or_wrong_token_saying_why(http_server: HttpServer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
    }
    accept = [("Accept", "application/json, text/event-stream")]
    token = http_server.token
    bare, invalid = (
        'Bearer realm="pkg"',
        f'Bearer realm="pkg", error="invalid_token", error_description="{WRONG_TOKEN}"',
    )
    for headers, status, challenge, message in (
        ([], 401, bare, NEEDS_TOKEN),
        ([("Authorization", token)], 401, bare, NEEDS_TOKEN),
        ([("Authorization", f"Basic {token}")], 401, bare, NEEDS_TOKEN),
        ([("Authorization", "Bearer")], 401, bare, NEEDS_TOKEN),
        ([("Authorization", "Bearer wrong")], 401, invalid, WRONG_TOKEN),
        ([("Authorization", f"Bearer {token}x")], 401, invalid, WRONG_TOKEN),
        (
            [("Authorization", f"Bearer {token}"), ("Authorization", "Bearer wrong")],
            400,
            'Bearer realm="pkg", error="invalid_request", error_description="send one Authorization header, not 2"',
            "send one Authorization header, not 2",
        ),
    ):
        answer = httpx2.post(http_server.url, json=initialize, headers=accept + headers, timeout=30)
        assert (answer.status_code, answer.headers["www-authenticate"]) == (status, challenge), headers
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    for scheme in ("Bearer", "bearer", "BEARER"):  # the scheme is case-insensitive (RFC 7235)
        good = httpx2.post(
            http_server.url, json=initialize, timeout=30, headers=accept + [("Authorization", f"{scheme} {token}")]
        )
        assert good.status_code == 200, good.text

    async def with_sdk_client(token: str | None, scheme: str) -> int:
        async with _client(http_server, token=token, scheme=scheme) as client:
            return len((await client.list_tools()).tools)

    assert asyncio.run(with_sdk_client(None, "bearer")) == len(TOOLS)
    with pytest.raises(BaseExceptionGroup) as refused:  # the SDK client cannot even initialize, and says why
        asyncio.run(with_sdk_client("wrong", "Bearer"))
    errors = refused.value.subgroup(lambda exc: isinstance(exc, MCPError))
    assert errors is not None and [str(e) for e in _leaves(errors)] == [WRONG_TOKEN]


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    return [leaf for e in group.exceptions for leaf in (_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]


@pytest.mark.cli
def test_file_outline_without_root_takes_the_sources_search_returns(built: Built) -> None:
    """With no --root (the allowed root is the working directory, here the database folder), file_outline
    answers for the absolute paths `search` returns, over HTTP and over stdio; other files outside the root
    stay refused, and `index` keeps to the root."""

    async def scenario(client: Client) -> None:
        [hit] = (await _ok(client, "search", {"text": "area of a circle from its radius", "k": 1}))["results"]
        outline = await _ok(client, "file_outline", {"path": hit["path"]})
        assert outline["path"] == hit["path"] == str((built.root / "corpus" / "pkgdemo" / "shapes.py").resolve())
        assert ("CLASS", "Circle") in [(row["label"], row["name"]) for row in outline["outline"]]
        elsewhere = str(built.root / "corpus" / "nothing.py")
        await _refused(client, "file_outline", {"path": elsewhere}, "outside the allowed roots")
        await _refused(client, "index", {"paths": [hit["path"]]}, "outside the allowed roots")

    async def over_http(server: HttpServer) -> None:
        async with _client(server) as client:
            await scenario(client)

    async def over_stdio() -> None:
        env = {**os.environ, **built.env}  # with PYTHONPATH: the working directory no longer finds this checkout
        params = StdioServerParameters(
            command=sys.executable, args=_serve_args(built, root=False), env=env, cwd=built.db
        )
        async with Client(params) as client:
            await scenario(client)

    with serving_http(built, "t0ken", root=False) as server:
        asyncio.run(over_http(server))
    asyncio.run(over_stdio())


@pytest.mark.cli
def test_http_answers_eight_clients_at_once(http_server: HttpServer) -> None:
    queries = {
        "area of a circle from its radius": "Circle.area",
        "the n-th fibonacci number": "fibonacci",
        "yield the non-empty lines of a text file": "read_lines",
        "check whether a number is prime": "is_prime",
    }

    async def one(text: str) -> str:
        async with _client(http_server) as client:
            names = []
            for _ in range(3):
                found = await _ok(client, "search", {"text": text, "k": 1})
                names.append(found["results"][0]["name"])
            assert len(set(names)) == 1
            return names[0]

    async def scenario() -> list[str]:
        texts = [text for text in queries for _ in range(2)]
        return list(await asyncio.gather(*(one(text) for text in texts)))

    answers = asyncio.run(scenario())
    assert answers == [queries[text] for text in queries for _ in range(2)]


@pytest.mark.cli
def test_serving_beyond_loopback_needs_a_token(built: Built) -> None:
    done = run_cli(*_serve_args(built, "--http", "0.0.0.0:8765")[2:], env_extra={"PKG_SERVE_TOKEN": ""})
    assert done.returncode != 0
    assert done.stderr.strip() == "pkg: serving on 0.0.0.0 needs a bearer token: pass --token or set PKG_SERVE_TOKEN"


def test_the_token_guard_passes_lifespan_events() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    async def scenario() -> None:
        guard = BearerTokenGuard(app, "t")
        await guard({"type": "lifespan"}, None, None)
        await guard({"type": "http", "headers": [(b"authorization", b"Bearer t")]}, None, None)

    asyncio.run(scenario())
    assert seen == ["lifespan", "http"]


# -- keeping the PKG up to date with files as they change ---------------------------------------------------
@pytest.mark.cli
def test_serve_watch_picks_up_an_edit(env: dict[str, str], tmp_path: Path) -> None:
    own = _build(tmp_path, env)
    params = StdioServerParameters(
        command=sys.executable, args=_serve_args(own, "--watch", str(own.root / "corpus")), env=own.env
    )

    async def scenario() -> None:
        async with Client(params) as client:
            await _ok(client, "stats", {})  # served while the watcher's first (no-op) build runs or ran
            (own.root / "corpus" / "convert.py").write_text(NEW_FUNCTION)
            deadline = time.monotonic() + 600  # a rebuild on a busy host; the loop ends when the function shows
            while time.monotonic() < deadline:
                result = await client.call_tool("get_function", {"name": "celsius_to_fahrenheit"})
                if not result.is_error:
                    return
                await asyncio.sleep(0.5)
            raise AssertionError("the new function never appeared")

    asyncio.run(scenario())


@pytest.mark.cli
def test_watch_builds_then_updates_on_an_edit(env: dict[str, str], tmp_path: Path) -> None:
    own = _build(tmp_path, env)
    process = subprocess.Popen(
        [sys.executable, "-m", "pkg", "watch", str(own.root / "corpus"), "--db", str(own.db)],
        env={**os.environ, **own.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("updated: files built 0, unchanged 3, removed 0"), first
        (own.root / "corpus" / "pkgdemo" / "shapes.py").write_text(
            (FIXTURES / "corpus" / "pkgdemo" / "shapes.py").read_text() + "\n\n" + NEW_FUNCTION
        )
        second = process.stdout.readline()
        assert second.startswith("updated: files built 1, unchanged 2, removed 0; functions 6,"), second
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert _nodes(own.db)["NAME"] == own.nodes["NAME"] + 1


# -- the store lookup behind get_function, on both stores ----------------------------------------------------
def test_both_stores_find_the_same_functions(module_embedder: CachedEmbedder, empty_neo4j: str, tmp_path: Path) -> None:
    stores = [EmbeddedStore(tmp_path / "db", create=True), Neo4jStore(empty_neo4j)]
    try:
        for store in stores:
            build([FIXTURES / "corpus"], store, module_embedder)
        cases = [
            ("area", None),
            ("Circle.area", None),
            ("__init__", "pkgdemo/shapes.py"),
            (None, "alpaca.jsonl"),
            ("ea", None),
            ("fibonacci", "alpaca.jsonl"),
            (None, "shapes.py"),
            (None, None),
        ]
        for name, source in cases:
            found = [[c.function.name for c in s.contexts(s.find_functions(name, source, 6))] for s in stores]
            assert found[0] == found[1], (name, source)
        in_file = [c.function.name for c in stores[1].contexts(stores[1].find_functions(None, "shapes.py", 10))]
        assert in_file == ["Circle.__init__", "Circle.area", "fibonacci", "read_lines", "fetch_all"]
        assert stores[1].find_functions("ea", None, 10) == [] and len(stores[1].find_functions(None, None, 6)) == 6
    finally:
        for store in stores:
            store.close()
