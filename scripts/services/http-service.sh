# The life cycle shared by the test servers that answer HTTP on 127.0.0.1 (s3.sh, s3rver.sh),
# sourced by them. The sourcing script sets SERVICE (its name in messages), DIR, PORT and
# URL_PATH (what to GET to see it answer), defines `exports` (its `export VAR=...` lines),
# `install` (fetch the server into $DIR when missing) and `launch` (start it in the
# background, output to $LOG), and then calls `service_main "$@"`.
#
# `up` is idempotent and always exits 0: when the server cannot start it prints one line
# `SERVICE: unavailable (reason)` on stderr and no exports, and the tests that need it skip.
set -u
PIDFILE="$DIR/server.pid"
LOG="$DIR/server.log"

unavailable() {
    echo "$SERVICE: unavailable ($1)" >&2
    exit 0
}

# Any HTTP answer counts (an S3 server answers an unsigned request with an error).
answers() {
    python3 - "http://127.0.0.1:$PORT$URL_PATH" <<'PY' 2>/dev/null
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
PY
}

service_up() {
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && answers; then
        exports
        exit 0
    fi
    mkdir -p "$DIR" || unavailable "cannot create $DIR"
    command -v python3 >/dev/null || unavailable "python3 is not installed"
    install
    launch
    echo $! >"$PIDFILE"
    for _ in $(seq 1 50); do
        if answers; then
            exports
            exit 0
        fi
        sleep 0.2
    done
    unavailable "$SERVICE did not answer on 127.0.0.1:$PORT; see $LOG"
}

service_down() {
    if [ -f "$PIDFILE" ]; then
        kill "$(cat "$PIDFILE")" 2>/dev/null
        rm -f "$PIDFILE"
    fi
}

service_main() {
    case "${1:-}" in
    up) service_up ;;
    down) service_down ;;
    *)
        echo "usage: $0 up|down" >&2
        exit 2
        ;;
    esac
}
