#!/usr/bin/env bash
# A second S3-compatible test server (s3rver, from npm) on 127.0.0.1, so the remote-cache tests
# see a behaviour difference between servers (s3rver ignores If-None-Match, for one).
#   scripts/services/s3rver.sh up     install s3rver if missing, start it, print `export VAR=...`
#   scripts/services/s3rver.sh down   stop it
# When it cannot start, `up` prints `s3rver: unavailable (reason)` and the tests that need it
# skip (the life cycle is scripts/services/http-service.sh). s3rver lives under
# ~/.cache/asymflow/s3rver, never in the repository. Its credentials are exported under their
# own names (the tests pass them to asymflow for this server only), so they never replace the
# AWS variables of scripts/services/s3.sh.
SERVICE=s3rver
DIR="${ASYMFLOW_S3RVER_DIR:-$HOME/.cache/asymflow/s3rver}"
PORT="${ASYMFLOW_S3RVER_PORT:-9788}"
URL_PATH=/
BIN="$DIR/node_modules/.bin/s3rver"
. "$(dirname "$0")/http-service.sh"

exports() {
    echo "export ASYMFLOW_TEST_S3RVER_ENDPOINT=http://127.0.0.1:$PORT"
    echo "export ASYMFLOW_TEST_S3RVER_KEY=S3RVER"
    echo "export ASYMFLOW_TEST_S3RVER_SECRET=S3RVER"
}

install() {
    command -v node >/dev/null || unavailable "node is not installed"
    [ -x "$BIN" ] && return
    command -v npm >/dev/null || unavailable "npm is not installed"
    (cd "$DIR" && npm install --no-audit --no-fund --silent s3rver@3 >"$DIR/install.log" 2>&1) \
        || unavailable "npm install s3rver failed; see $DIR/install.log"
}

launch() {
    mkdir -p "$DIR/data"
    nohup node "$BIN" -d "$DIR/data" -a 127.0.0.1 -p "$PORT" --silent \
        --allow-mismatched-signatures --no-vhost-buckets >"$LOG" 2>&1 &
}

service_main "$@"
