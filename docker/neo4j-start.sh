#!/usr/bin/env bash
# Start a local Neo4j 5.26 Community database without Docker (embedded launcher in
# docker/neo4j-embedded: Bolt only, on 127.0.0.1, auth off unless PKG_NEO4J_PASSWORD is set)
# and print its Bolt URI.
#
#   docker/neo4j-start.sh [--home DIR] [--port N]
#
# Env: PKG_NEO4J_HOME (default ~/.cache/pkg/neo4j), PKG_NEO4J_PORT (7687),
#      PKG_NEO4J_START_TIMEOUT (seconds, 180), PKG_NEO4J_HEAP (JVM heap, 1g),
#      PKG_NEO4J_PASSWORD (if set: auth enabled, as in docker-compose.yml, user neo4j with this
#      password; it applies when the server starts, not to one already running for HOME).
# Files in HOME: neo4j.pid, neo4j.log (launcher output), data/ and logs/ (Neo4j's own).
# Stop with docker/neo4j-stop.sh --home DIR.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
launcher_dir="$script_dir/neo4j-embedded"
usage_args="[--home DIR] [--port N]"
# shellcheck source=docker/neo4j-common.sh
source "$script_dir/neo4j-common.sh"

port="${PKG_NEO4J_PORT:-7687}"
start_timeout="${PKG_NEO4J_START_TIMEOUT:-180}"
heap="${PKG_NEO4J_HEAP:-1g}"

while (($#)); do
    case "$1" in
        --home) (($# >= 2)) || usage; home="$2"; shift 2 ;;
        --port) (($# >= 2)) || usage; port="$2"; shift 2 ;;
        *) usage ;;
    esac
done
if ! [[ "$port" =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
    echo "neo4j-start: invalid port '$port' (expected 1-65535)" >&2
    usage
fi
if ! [[ "$start_timeout" =~ ^[0-9]+$ ]]; then
    echo "neo4j-start: PKG_NEO4J_START_TIMEOUT must be a number of seconds, got '$start_timeout'" >&2
    exit 2
fi

mkdir -p "$home"
home=$(cd "$home" && pwd)
pid_file="$home/neo4j.pid"
log_file="$home/neo4j.log"
uri="bolt://127.0.0.1:$port"

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

# Already running for this home: report the URI it announced.
if [[ -f "$pid_file" ]]; then
    running_pid=$(cat "$pid_file")
    if is_launcher "$running_pid"; then
        running_uri=$(grep '^READY ' "$log_file" 2>/dev/null | tail -n 1 | cut -d' ' -f2 || true)
        if [[ -z "$running_uri" ]]; then
            echo "neo4j-start: launcher (pid $running_pid) for $home is running but not ready yet" >&2
            exit 1
        fi
        echo "$running_uri"
        exit 0
    fi
    rm -f "$pid_file"
fi

java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if ! command -v "$java_bin" >/dev/null; then
    echo "neo4j-start: java not found (Java 17+ is required; set JAVA_HOME or PATH)" >&2
    exit 1
fi

# Build the launcher when it is missing or its pom/sources changed since the last build.
stamp="$launcher_dir/target/.build-stamp"
if [[ ! -d "$launcher_dir/target/classes" || ! -d "$launcher_dir/target/lib" || ! -f "$stamp" ]] ||
    [[ -n "$(find "$launcher_dir/pom.xml" "$launcher_dir/src" -newer "$stamp" -print -quit)" ]]; then
    if ! command -v mvn >/dev/null; then
        echo "neo4j-start: mvn not found (Maven is needed to build $launcher_dir)" >&2
        exit 1
    fi
    build_log=$(mktemp)
    # clean: copy-dependencies never deletes jars left over from an older pom.
    if ! mvn -q -B -f "$launcher_dir/pom.xml" clean compile >"$build_log" 2>&1; then
        echo "neo4j-start: Maven build of the Neo4j launcher failed; last lines:" >&2
        tail -n 30 "$build_log" >&2
        rm -f "$build_log"
        exit 1
    fi
    rm -f "$build_log"
    touch "$stamp"
fi

if port_open; then
    echo "neo4j-start: port $port on 127.0.0.1 is already in use" >&2
    exit 1
fi

# JVM flags from the Neo4j 5.26 server's default neo4j.conf (server.jvm.additional), minus the
# ones meant only for profiling/TLS and -XX:+TrustFinalNonStaticFields (unsafe for embedded use).
jvm_opts=(
    "-Xms$heap" "-Xmx$heap"
    -XX:+UseG1GC
    -XX:-OmitStackTraceInFastThrow
    -XX:+DisableExplicitGC
    -Djdk.nio.maxCachedBufferSize=1024
    -Dio.netty.tryReflectionSetAccessible=true
    -Dlog4j2.disable.jmx=true
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/java.io=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --enable-native-access=ALL-UNNAMED
)

launcher_pid=""
fail() {
    echo "neo4j-start: $1" >&2
    if [[ -n "$launcher_pid" ]]; then
        if [[ -s "$log_file" ]]; then
            echo "--- last lines of $log_file ---" >&2
            tail -c "+$((log_offset + 1))" "$log_file" | tail -n 20 >&2
        fi
        kill -TERM "$launcher_pid" 2>/dev/null || true
        for _ in $(seq 20); do kill -0 "$launcher_pid" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$launcher_pid" 2>/dev/null || true
        rm -f "$pid_file"
    fi
    exit 1
}
trap 'fail "interrupted"' INT TERM

# Append to the log; only what this start writes (after log_offset) is inspected.
touch "$log_file"
log_offset=$(wc -c <"$log_file")
echo "=== $(date -u '+%Y-%m-%dT%H:%M:%SZ') starting on $uri" >>"$log_file"
rm -f "$pid_file"
cd "$home" # JVM crash files (hs_err_pid*.log) land next to the log
# The inner shell records its own PID, then becomes the JVM; this holds even if setsid forks.
# shellcheck disable=SC2016 # $$ and $@ are meant for the inner shell
launcher=(nohup bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pid_file"
    "$java_bin" "${jvm_opts[@]}" -cp "$launcher_dir/target/classes:$launcher_dir/target/lib/*"
    "$main_class" --home "$home" --port "$port")
if command -v setsid >/dev/null; then
    launcher=(setsid "${launcher[@]}")
fi
"${launcher[@]}" >>"$log_file" 2>&1 </dev/null &

for _ in $(seq 50); do
    [[ -s "$pid_file" ]] && break
    sleep 0.1
done
[[ -s "$pid_file" ]] || fail "launcher did not start (no pid file written)"
launcher_pid=$(cat "$pid_file")

deadline=$((SECONDS + start_timeout))
until grep -qx "READY $uri" <(tail -c "+$((log_offset + 1))" "$log_file") && port_open; do
    kill -0 "$launcher_pid" 2>/dev/null || fail "Neo4j exited during start-up"
    ((SECONDS < deadline)) || fail "Neo4j not ready on $uri after ${start_timeout}s"
    sleep 0.5
done
trap - INT TERM
echo "$uri"
