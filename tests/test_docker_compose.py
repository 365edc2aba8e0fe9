"""docker/docker-compose.yml serves the database the launcher runs: same Neo4j line, reachable where
the store looks by default, credentials from the environment, data kept in a volume."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import yaml

from pkg.stores.neo4j_store import DEFAULT_URI

DOCKER = Path(__file__).resolve().parent.parent / "docker"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def neo4j_service(compose: dict) -> dict:
    return compose["services"]["neo4j"]


def launcher_version() -> str:
    pom = ElementTree.parse(DOCKER / "neo4j-embedded" / "pom.xml").getroot()
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    return pom.find("m:properties/m:neo4j.version", namespace).text


def test_image_is_the_launchers_neo4j_line(neo4j_service: dict) -> None:
    image, _, tag = neo4j_service["image"].partition(":")
    assert image == "neo4j"
    version = launcher_version()
    major, minor, _patch = version.split(".")
    assert tag == f"{major}.{minor}"
    readme = (DOCKER.parent / "README.md").read_text(encoding="utf-8")
    assert f"Neo4j {version} from Maven Central" in readme


def test_bolt_is_published_on_loopback_at_the_stores_default_port(neo4j_service: dict) -> None:
    default_port = DEFAULT_URI.rsplit(":", 1)[1]
    bolt = [p for p in neo4j_service["ports"] if p.endswith(":7687")]
    assert len(bolt) == 1
    host, published, _container = re.fullmatch(r"(.+?):(\$\{[^}]*\}|\d+):(\d+)", bolt[0]).groups()
    assert host == "127.0.0.1"
    assert published in (default_port, f"${{PKG_NEO4J_PORT:-{default_port}}}")
    assert all(p.startswith("127.0.0.1:") for p in neo4j_service["ports"])


def test_credentials_come_from_the_environment(neo4j_service: dict) -> None:
    auth = neo4j_service["environment"]["NEO4J_AUTH"]
    default = re.fullmatch(r"\$\{NEO4J_AUTH:-(.+)\}", auth).group(1)
    user, _, password = default.partition("/")
    assert user == "neo4j" and len(password) >= 8  # the image refuses shorter passwords


def test_healthcheck_splits_neo4j_auth_as_the_image_does(neo4j_service: dict) -> None:
    """The healthcheck's shell expansions ("$$" is compose's escape for "$") yield the user and
    the password of NEO4J_AUTH, also when the password holds a slash."""
    command = neo4j_service["healthcheck"]["test"][1].replace("$$", "$")
    user_expr, password_expr = re.search(r'-u ("[^"]+") -p ("[^"]+")', command).groups()
    shown = subprocess.run(
        ["sh", "-c", f"printf '%s\\n' {user_expr} {password_expr}"],
        env={"NEO4J_AUTH": "neo4j/pa/ss word"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert shown == ["neo4j", "pa/ss word"]


def test_data_lives_in_a_named_volume(compose: dict, neo4j_service: dict) -> None:
    volume, _, mount = neo4j_service["volumes"][0].partition(":")
    assert mount == "/data" and volume in compose["volumes"]
