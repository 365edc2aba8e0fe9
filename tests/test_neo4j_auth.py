"""The Neo4j store against a server with auth on, as docker/docker-compose.yml runs Neo4j: the
launcher started with PKG_NEO4J_PASSWORD (user neo4j), credentials from NEO4J_USER/NEO4J_PASSWORD."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.neo4j_server import start_local

PASSWORD = "pkg-test-password"


@pytest.fixture(scope="module")
def auth_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = start_local(tmp_path_factory.mktemp("neo4j-auth"), password=PASSWORD)
    try:
        yield server.uri
    finally:
        server.stop()


def _env(uri: str, tmp_path: Path, **credentials: str) -> dict[str, str]:
    env = {"NEO4J_URI": uri, "PKG_CACHE_DIR": str(tmp_path / "cache"), "NEO4J_USER": "", "NEO4J_PASSWORD": ""}
    env.update(credentials)
    return env


@pytest.mark.cli
def test_build_and_query_with_credentials(auth_neo4j: str, tmp_path: Path) -> None:
    env = _env(auth_neo4j, tmp_path, NEO4J_USER="neo4j", NEO4J_PASSWORD=PASSWORD)
    at = ("--store", "neo4j", "--db", str(tmp_path / "db"))  # the BM25 indexes' folder
    done = run_cli("build", str(FIXTURES / "corpus"), *at, "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["functions"] == 7
    done = run_cli("query", "check if an integer is a prime number", *at, "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["name"] == "is_prime"


@pytest.mark.cli
def test_a_wrong_password_is_one_line(auth_neo4j: str, tmp_path: Path) -> None:
    done = run_cli("stats", "--store", "neo4j", env_extra=_env(auth_neo4j, tmp_path, NEO4J_PASSWORD="wrong-password"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"pkg: Neo4j at {auth_neo4j} refused the credentials of 'neo4j'\n"


@pytest.mark.cli
def test_missing_credentials_are_one_line(auth_neo4j: str, tmp_path: Path) -> None:
    done = run_cli("stats", "--store", "neo4j", env_extra=_env(auth_neo4j, tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"pkg: Neo4j at {auth_neo4j} requires credentials: set NEO4J_USER and NEO4J_PASSWORD\n"
