#!/usr/bin/env bash
# A second S3-compatible test server (s3rver, from npm) on 127.0.0.1, so the remote-cache tests
# see a behaviour difference between servers (s3rver ignores If-None-Match, for one).
#   scripts/services/s3rver.sh up     install s3rver if missing, start it, print `export VAR=...`
#   scripts/services/s3rver.sh down   stop it
# `up` is idempotent and always exits 0: when the server cannot start it prints one line
# `s3rver: unavailable (reason)` on stderr and no exports, and the tests that need it skip.
# s3rver lives under ~/.cache/asymflow/s3rver, never in the repository. Its credentials are
# exported under their own names (the tests pass them to asymflow for this server only), so
# they never replace the AWS variables of scripts/services/s3.sh.
set -u
DIR="${ASYMFLOW_S3RVER_DIR:-$HOME/.cache/asymflow/s3rver}"
PORT="${ASYMFLOW_S3RVER_PORT:-9788}"
PIDFILE="$DIR/server.pid"
LOG="$DIR/server.log"
BIN="$DIR/node_modules/.bin/s3rver"

unavailable() {
    echo "s3rver: unavailable ($1)" >&2
    exit 0
}

exports() {
    echo "export ASYMFLOW_TEST_S3RVER_ENDPOINT=http://127.0.0.1:$PORT"
    echo "export ASYMFLOW_TEST_S3RVER_KEY=S3RVER"
    echo "export ASYMFLOW_TEST_S3RVER_SECRET=S3RVER"
}

answers() {
    python3 - "$PORT" <<'PY' 2>/dev/null
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=1)
except urllib.error.HTTPError:
    pass  # it answered (an S3 error for an unsigned listing)
except Exception:
    sys.exit(1)
PY
}

case "${1:-}" in
up)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && answers; then
        exports
        exit 0
    fi
    mkdir -p "$DIR/data" || unavailable "cannot create $DIR"
    if [ ! -x "$BIN" ]; then
        command -v npm >/dev/null || unavailable "npm is not installed"
        (cd "$DIR" && npm install --no-audit --no-fund --silent s3rver@3 >"$DIR/install.log" 2>&1) \
            || unavailable "npm install s3rver failed; see $DIR/install.log"
    fi
    command -v node >/dev/null || unavailable "node is not installed"
    nohup node "$BIN" -d "$DIR/data" -a 127.0.0.1 -p "$PORT" --silent \
        --allow-mismatched-signatures --no-vhost-buckets >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 50); do
        if answers; then
            exports
            exit 0
        fi
        sleep 0.2
    done
    unavailable "s3rver did not answer on 127.0.0.1:$PORT; see $LOG"
    ;;
down)
    if [ -f "$PIDFILE" ]; then
        kill "$(cat "$PIDFILE")" 2>/dev/null
        rm -f "$PIDFILE"
    fi
    ;;
*)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
