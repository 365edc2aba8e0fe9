"""A real Neo4j for the tests: the local launcher in docker/, and a wipe between tests."""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.store_support import cypher, neo4j_driver

DOCKER = Path(__file__).resolve().parents[1] / "docker"
START_TIMEOUT = 600  # seconds; the first start also builds the launcher with Maven


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LocalNeo4j:
    """A Neo4j started by docker/neo4j-start.sh in its own home directory."""

    home: Path
    uri: str
    pid: int

    def stop(self) -> None:
        """Shut it down (cleanly if it lets itself); RuntimeError if it is still running after."""
        done = subprocess.run(
            [str(DOCKER / "neo4j-stop.sh"), "--home", str(self.home)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if _alive(self.pid):
            raise RuntimeError(f"Neo4j (pid {self.pid}) still runs after neo4j-stop.sh: {done.stdout}{done.stderr}")


def start_local(home: Path, password: str | None = None) -> LocalNeo4j:
    """Start a Neo4j on a free port with its data under home (auth on, user neo4j, if a password
    is given); RuntimeError with the launcher's own explanation if it does not come up."""
    env = {k: v for k, v in os.environ.items() if k != "PKG_NEO4J_PASSWORD"}
    if password is not None:
        env["PKG_NEO4J_PASSWORD"] = password
    done = subprocess.run(
        [str(DOCKER / "neo4j-start.sh"), "--home", str(home), "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"docker/neo4j-start.sh failed (exit {done.returncode}):\n{done.stderr.strip()}")
    return LocalNeo4j(home, done.stdout.strip().splitlines()[-1], int((home / "neo4j.pid").read_text()))


def wipe(uri: str) -> None:
    """Empty the database: every node and relationship, then every constraint and index.

    Credentials come from NEO4J_USER / NEO4J_PASSWORD like the store's."""
    database = os.environ.get("NEO4J_DATABASE") or None
    with neo4j_driver(uri) as driver:
        with driver.session(database=database) as session:
            session.run(cypher("wipe_nodes")).consume()
        for listing, drop in (("list_constraints", "drop_constraint"), ("list_indexes", "drop_index")):
            for record in driver.execute_query(cypher(listing), database_=database).records:
                driver.execute_query(cypher(drop), name=record["name"], database_=database)
