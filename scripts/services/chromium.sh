#!/usr/bin/env bash
# Headless Chromium for the dashboard's browser tests (tests/serve_browser.rs).
#
#   scripts/services/chromium.sh up     install Debian's chromium + chromium-driver when missing,
#                                       start chromedriver on 127.0.0.1, print `export` lines:
#                                         ASYMFLOW_WEBDRIVER  the WebDriver URL
#                                         ASYMFLOW_CHROMIUM   the browser binary
#   scripts/services/chromium.sh down   stop that chromedriver
#
# `up` is idempotent and always exits 0; when Chromium cannot be had it prints one line
# `chromium: unavailable (reason)` on stderr and no exports, and the browser tests skip.
set -u

state_dir="${ASYMFLOW_SERVICES_DIR:-${TMPDIR:-/tmp}/asymflow-services}"
pid_file="$state_dir/chromedriver.pid"
port="${ASYMFLOW_CHROMEDRIVER_PORT:-9515}"

unavailable() {
    echo "chromium: unavailable ($1)" >&2
    exit 0
}

find_browser() {
    for b in chromium chromium-browser; do
        if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return 0; fi
    done
    return 1
}

running() {
    [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

up() {
    if ! find_browser >/dev/null || ! command -v chromedriver >/dev/null 2>&1; then
        if ! command -v apt-get >/dev/null 2>&1; then
            unavailable "no apt-get to install Debian's chromium and chromium-driver"
        fi
        sudo_cmd=""
        if [ "$(id -u)" != "0" ]; then
            command -v sudo >/dev/null 2>&1 || unavailable "installing chromium needs root or sudo"
            sudo_cmd="sudo -n"
        fi
        log="$state_dir/apt.log"
        mkdir -p "$state_dir"
        if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                $sudo_cmd apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >"$log" 2>&1; then
            unavailable "apt-get install chromium chromium-driver failed; see $log"
        fi
    fi
    browser="$(find_browser)" || unavailable "no chromium binary after installing"
    driver="$(command -v chromedriver)" || unavailable "no chromedriver binary after installing"
    mkdir -p "$state_dir"
    if ! running; then
        "$driver" --port="$port" --allowed-ips=127.0.0.1 --log-path="$state_dir/chromedriver.log" \
            >/dev/null 2>&1 &
        echo $! >"$pid_file"
        for _ in $(seq 1 50); do
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
            sleep 0.1
        done
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            down
            unavailable "chromedriver did not start on 127.0.0.1:$port; see $state_dir/chromedriver.log"
        fi
    fi
    echo "export ASYMFLOW_WEBDRIVER=http://127.0.0.1:$port"
    echo "export ASYMFLOW_CHROMIUM=$browser"
}

down() {
    if running; then
        kill "$(cat "$pid_file")" 2>/dev/null
    fi
    rm -f "$pid_file"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
