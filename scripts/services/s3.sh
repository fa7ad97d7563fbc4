#!/usr/bin/env bash
# An S3-compatible test server (moto) on 127.0.0.1, for the remote-cache tests.
#   scripts/services/s3.sh up     install moto if missing, start it, print `export VAR=...`
#   scripts/services/s3.sh down   stop it
# When it cannot start, `up` prints `s3: unavailable (reason)` and the tests that need it skip
# (the life cycle is scripts/services/http-service.sh). moto lives in a virtual environment
# under ~/.cache/asymflow/moto, never in the repository.
SERVICE=s3
DIR="${ASYMFLOW_MOTO_DIR:-$HOME/.cache/asymflow/moto}"
PORT="${ASYMFLOW_S3_PORT:-9787}"
URL_PATH=/moto-api/
. "$(dirname "$0")/http-service.sh"

exports() {
    echo "export ASYMFLOW_TEST_S3_ENDPOINT=http://127.0.0.1:$PORT"
    echo "export AWS_ACCESS_KEY_ID=testing"
    echo "export AWS_SECRET_ACCESS_KEY=testing"
    echo "export AWS_REGION=us-east-1"
}

install() {
    [ -x "$DIR/venv/bin/moto_server" ] && return
    python3 -m venv "$DIR/venv" >"$DIR/install.log" 2>&1 \
        || unavailable "python3 -m venv failed; see $DIR/install.log"
    "$DIR/venv/bin/pip" install --quiet 'moto[s3,server]==5.2.5' >>"$DIR/install.log" 2>&1 \
        || unavailable "pip install moto[s3,server] failed; see $DIR/install.log"
}

launch() {
    nohup "$DIR/venv/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
}

service_main "$@"
