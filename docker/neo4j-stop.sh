#!/usr/bin/env bash
# Stop the Neo4j launcher started by docker/neo4j-start.sh for HOME.
#
#   docker/neo4j-stop.sh [--home DIR]
#
# Sends SIGTERM (clean shutdown), waits up to PKG_NEO4J_STOP_TIMEOUT seconds (default 60),
# then SIGKILLs. Exits 0 when stopped cleanly or when nothing was running, 1 if it had to SIGKILL.
set -euo pipefail

usage_args="[--home DIR]"
# shellcheck source=docker/neo4j-common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/neo4j-common.sh"
stop_timeout="${PKG_NEO4J_STOP_TIMEOUT:-60}"

while (($#)); do
    case "$1" in
        --home) (($# >= 2)) || usage; home="$2"; shift 2 ;;
        *) usage ;;
    esac
done

pid_file="$home/neo4j.pid"
if [[ ! -f "$pid_file" ]]; then
    echo "neo4j-stop: not running (no $pid_file)"
    exit 0
fi
pid=$(cat "$pid_file")
# Ignore a stale pid file, including a PID since reused by another program.
if ! is_launcher "$pid"; then
    echo "neo4j-stop: not running (stale pid file removed)"
    rm -f "$pid_file"
    exit 0
fi

kill -TERM "$pid"
deadline=$((SECONDS + stop_timeout))
while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
        kill -KILL "$pid" 2>/dev/null || true
        # Tearing down a large JVM takes a moment; wait so a following start finds the port free.
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        rm -f "$pid_file"
        echo "neo4j-stop: pid $pid did not stop within ${stop_timeout}s; killed it (unclean shutdown)" >&2
        exit 1
    fi
    sleep 0.2
done
rm -f "$pid_file"
echo "neo4j-stop: stopped pid $pid"
