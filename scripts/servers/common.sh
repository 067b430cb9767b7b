# What the server scripts share (sourced by opensearch.sh and neo4j.sh): stopping the
# process a pid file names, and running a command with the server up.

# stop_pidfile PIDFILE SECONDS: SIGTERM, then SIGKILL after SECONDS; the pid file goes.
stop_pidfile() {
    local pidfile="$1" grace="$2" pid
    [ -s "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 "$grace"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

# crash_pidfile PIDFILE: SIGKILL at once (no shutdown runs, as in a power cut), waits
# until the process is gone; the pid file goes.
crash_pidfile() {
    local pidfile="$1" pid
    [ -s "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"
}

# run_with_server CMD...: runs CMD with the server up (started here when it is not,
# and then stopped again) and returns CMD's status. The caller defines `ready`,
# `start` and `stop`.
run_with_server() {
    local started=0 status=0
    if ! ready; then start; started=1; fi
    "$@" || status=$?
    if [ "$started" = 1 ]; then stop; fi
    return "$status"
}
