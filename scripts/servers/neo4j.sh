#!/usr/bin/env bash
# Neo4j 5.26 Community for the test suite and benchmarks: `neo4j.sh start` builds the
# appliance's launcher (scripts/servers/neo4j, Maven Central jars, once, cached), starts
# one database service with Bolt on 127.0.0.1 and waits for its READY line (the port
# opens before the password is set); `neo4j.sh stop` stops it; `neo4j.sh run CMD...`
# runs CMD with a server up, stops it if it started it, and exits with CMD's status.
# A start that fails exits non-zero with the server's log: tests never go on without it.
#
# Environment: APPLIANCE_SERVER_CACHE (default ~/.cache/appliance-servers),
# NEO4J_PORT (7687), NEO4J_HEAP (512m), NEO4J_PASSWORD_FILE (made in the server folder).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"
version=5.26.30
cache="${APPLIANCE_SERVER_CACHE:-$HOME/.cache/appliance-servers}"
port="${NEO4J_PORT:-7687}"
heap="${NEO4J_HEAP:-512m}"
build="$cache/neo4j-launcher-$version"
node="$cache/neo4j-$version-$port"
password_file="${NEO4J_PASSWORD_FILE:-$node/password}"
pidfile="$node/neo4j.pid"
log="$node/console.log"

fetch() {
    [ -s "$build/neo4j-launcher-1.jar" ] && [ "$build/neo4j-launcher-1.jar" -nt "$here/neo4j/src/main/java/appliance/Neo4jLauncher.java" ] && return
    echo "building the Neo4j $version launcher from Maven Central jars (once; cached in $cache)"
    rm -rf "$build.part" && mkdir -p "$build.part"
    cp -r "$here/neo4j/pom.xml" "$here/neo4j/src" "$build.part/"
    mvn -B -q -f "$build.part/pom.xml" package -DskipTests
    rm -rf "$build" && mkdir -p "$build"
    mv "$build.part/target/neo4j-launcher-1.jar" "$build.part/target/lib" "$build/"
    rm -rf "$build.part"
}

ready() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && grep -q '^READY' "$log"; }

start() {
    if ready; then echo "Neo4j already runs on 127.0.0.1:$port"; return; fi
    fetch
    mkdir -p "$node" && chmod 700 "$node"
    if [ ! -s "$password_file" ]; then
        (umask 077; python3 -c 'import secrets; print(secrets.token_urlsafe(24))' >"$password_file")
    fi
    java_home="${NEO4J_JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
    "$java_home/bin/java" -Xms"$heap" -Xmx"$heap" \
        --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED \
        -cp "$build/neo4j-launcher-1.jar:$build/lib/*" appliance.Neo4jLauncher \
        "$node/data" "$port" "$password_file" </dev/null >"$log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 120); do
        if grep -q '^READY' "$log"; then echo "Neo4j $version answers on 127.0.0.1:$port"; return; fi
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then break; fi
        sleep 1
    done
    echo "Neo4j did not start on 127.0.0.1:$port; its log:" >&2
    tail -n 40 "$log" >&2 || true
    stop
    exit 1
}

stop() { stop_pidfile "$pidfile" 40; }

case "${1:-}" in
    start) start ;;
    run)
        shift
        export APPLIANCE_TEST_NEO4J_URL="bolt://127.0.0.1:$port"
        export APPLIANCE_TEST_NEO4J_PASSWORD_FILE="$password_file"
        run_with_server "$@"
        ;;
    stop) stop ;;
    fetch) fetch ;;
    *) echo "usage: $0 start|stop|fetch|run CMD..." >&2; exit 2 ;;
esac
