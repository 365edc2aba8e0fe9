# What docker/neo4j-start.sh and docker/neo4j-stop.sh share (sourced by both, after they set `usage_args`):
# the launcher's main class, the default home, the usage line and how a PID is known to be the launcher.

main_class=dev.pkg.neo4j.EmbeddedNeo4j
home="${PKG_NEO4J_HOME:-$HOME/.cache/pkg/neo4j}"

usage() {
    echo "usage: $(basename "$0") $usage_args" >&2
    exit 2
}

# True if PID is alive and is this launcher (guards against a stale pid file and PID reuse).
is_launcher() {
    [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null && tr "\0" " " 2>/dev/null < "/proc/$1/cmdline" | grep -q "$main_class"
}
