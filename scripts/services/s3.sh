#!/usr/bin/env bash
# An S3-compatible test server (moto) on 127.0.0.1, for the remote-cache tests.
#   scripts/services/s3.sh up     install moto if missing, start it, print `export VAR=...`
#   scripts/services/s3.sh down   stop it
# `up` is idempotent and always exits 0: when the server cannot start it prints one line
# `s3: unavailable (reason)` on stderr and no exports, and the tests that need it skip.
# moto lives in a virtual environment under ~/.cache/asymflow/moto, never in the repository.
set -u
DIR="${ASYMFLOW_MOTO_DIR:-$HOME/.cache/asymflow/moto}"
PORT="${ASYMFLOW_S3_PORT:-9787}"
PIDFILE="$DIR/server.pid"
LOG="$DIR/server.log"

unavailable() {
    echo "s3: unavailable ($1)" >&2
    exit 0
}

exports() {
    echo "export ASYMFLOW_TEST_S3_ENDPOINT=http://127.0.0.1:$PORT"
    echo "export AWS_ACCESS_KEY_ID=testing"
    echo "export AWS_SECRET_ACCESS_KEY=testing"
    echo "export AWS_REGION=us-east-1"
}

answers() {
    python3 - "$PORT" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/", timeout=1)
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
    mkdir -p "$DIR" || unavailable "cannot create $DIR"
    if [ ! -x "$DIR/venv/bin/moto_server" ]; then
        command -v python3 >/dev/null || unavailable "python3 is not installed"
        python3 -m venv "$DIR/venv" >"$DIR/install.log" 2>&1 \
            || unavailable "python3 -m venv failed; see $DIR/install.log"
        "$DIR/venv/bin/pip" install --quiet 'moto[s3,server]==5.2.5' >>"$DIR/install.log" 2>&1 \
            || unavailable "pip install moto[s3,server] failed; see $DIR/install.log"
    fi
    nohup "$DIR/venv/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 50); do
        if answers; then
            exports
            exit 0
        fi
        sleep 0.2
    done
    unavailable "moto_server did not answer on 127.0.0.1:$PORT; see $LOG"
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
