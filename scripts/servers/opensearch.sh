#!/usr/bin/env bash
# OpenSearch for the test suite and benchmarks: `opensearch.sh start` fetches OpenSearch
# 2.19.6 from Maven Central once (into a cache folder reused across runs), adds the
# analysis-common and lang-painless modules the lexical index needs, starts one node on
# 127.0.0.1 and waits until it answers; `opensearch.sh stop` stops it;
# `opensearch.sh run CMD...` runs CMD with a node up, stops the node if it started it,
# and exits with CMD's status; `opensearch.sh crash` kills it at once (SIGKILL: the
# fault tests' power cut). A start that fails exits non-zero with the node's log: a
# test run never goes on without its server.
#
# Environment: APPLIANCE_SERVER_CACHE (default ~/.cache/appliance-servers),
# OPENSEARCH_PORT (9200), OPENSEARCH_HEAP (512m), OPENSEARCH_JAVA_HOME (Java 17).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"
version=2.19.6
cache="${APPLIANCE_SERVER_CACHE:-$HOME/.cache/appliance-servers}"
port="${OPENSEARCH_PORT:-9200}"
heap="${OPENSEARCH_HEAP:-512m}"
# OpenSearch refuses to run as root, and its folder must be readable by the user it runs
# as: under /root it would not be, so a root caller's node lives in /var/lib.
if [ "$(id -u)" = 0 ]; then
    user=appliance-search
    home=/var/lib/appliance-search
else
    user="$(id -un)"
    home="$cache"
fi
node="$home/opensearch-$version-$port"
pidfile="$node/opensearch.pid"
log="$node/console.log"

as_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

fetch() {
    local zip="$cache/opensearch-$version.zip" jars="$cache/opensearch-$version-modules"
    mkdir -p "$cache"
    if [ ! -s "$zip" ]; then
        echo "fetching OpenSearch $version from Maven Central (once; cached in $cache)"
        mvn -B -q dependency:copy \
            -Dartifact="org.opensearch.distribution.integ-test-zip:opensearch:$version:zip" \
            -DoutputDirectory="$cache.part"
        mv "$cache.part/opensearch-$version.zip" "$zip" && rmdir "$cache.part"
    fi
    if [ ! -s "$jars/analysis-common-$version.jar" ]; then
        mvn -B -q -f "$here/opensearch/pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$jars.part"
        rm -rf "$jars" && mv "$jars.part" "$jars"
    fi
}

module() {  # module NAME CLASS EXTENDS JAR...
    local name="$1" classname="$2" extends="$3"
    shift 3
    local dir="$node/modules/$name"
    mkdir -p "$dir"
    for jar in "$@"; do cp "$cache/opensearch-$version-modules/$jar" "$dir/"; done
    cat >"$dir/plugin-descriptor.properties" <<PROPS
description=$name, added by the appliance's test scripts
version=$version
name=$name
classname=$classname
java.version=11
opensearch.version=$version
custom.foldername=$name
extended.plugins=$extends
has.native.controller=false
PROPS
}

install() {
    [ -x "$node/bin/opensearch" ] && return
    fetch
    if [ "$(id -u)" = 0 ] && ! id "$user" >/dev/null 2>&1; then
        useradd --system --home-dir "$home" --shell /usr/sbin/nologin "$user"
    fi
    mkdir -p "$home"
    rm -rf "$node" "$node.part"
    mkdir -p "$node.part"
    # Python's zipfile (no unzip on a bare machine) keeps no modes: bin/ is made
    # executable again.
    python3 -m zipfile -e "$cache/opensearch-$version.zip" "$node.part"
    mv "$node.part/opensearch-$version" "$node" && rmdir "$node.part"
    chmod +x "$node"/bin/*
    module lang-painless org.opensearch.painless.PainlessPlugin "" \
        "lang-painless-$version.jar" "opensearch-scripting-painless-spi-$version.jar" \
        antlr4-runtime-4.13.1.jar asm-9.7.jar asm-analysis-9.7.jar asm-commons-9.7.jar \
        asm-tree-9.7.jar asm-util-9.7.jar
    cat >"$node/modules/lang-painless/plugin-security.policy" <<'POLICY'
grant {
  permission java.lang.RuntimePermission "createClassLoader";
  permission java.lang.RuntimePermission "getClassLoader";
};
POLICY
    module analysis-common org.opensearch.analysis.common.CommonAnalysisPlugin lang-painless \
        "analysis-common-$version.jar"
    if [ "$(id -u)" = 0 ]; then chown -R "$user" "$home"; fi
}

ready() {
    curl -fsS "http://127.0.0.1:$port/_cluster/health?wait_for_status=yellow&timeout=1s" \
        >/dev/null 2>&1
}

start() {
    if ready; then echo "OpenSearch already answers on 127.0.0.1:$port"; return; fi
    install
    java_home="${OPENSEARCH_JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
    rm -f "$pidfile"
    as_user env OPENSEARCH_JAVA_HOME="$java_home" OPENSEARCH_JAVA_OPTS="-Xms$heap -Xmx$heap" \
        "$node/bin/opensearch" -d -p "$pidfile" \
        -Ediscovery.type=single-node -Enetwork.host=127.0.0.1 -Ehttp.port="$port" \
        -Ecluster.routing.allocation.disk.threshold_enabled=false \
        -Epath.data="$node/data" -Epath.logs="$node/logs" \
        </dev/null >"$log" 2>&1
    for _ in $(seq 1 120); do
        if ready; then echo "OpenSearch $version answers on 127.0.0.1:$port"; return; fi
        sleep 1
    done
    echo "OpenSearch did not answer on 127.0.0.1:$port within 120 s; its log:" >&2
    tail -n 40 "$log" "$node/logs/"*.log 2>/dev/null >&2 || true
    stop
    exit 1
}

stop() { stop_pidfile "$pidfile" 30; }

crash() { crash_pidfile "$pidfile"; }

case "${1:-}" in
    start) start ;;
    run) shift; run_with_server "$@" ;;
    stop) stop ;;
    crash) crash ;;
    fetch) fetch ;;
    *) echo "usage: $0 start|stop|crash|fetch|run CMD..." >&2; exit 2 ;;
esac
