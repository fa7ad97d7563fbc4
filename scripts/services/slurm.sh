#!/usr/bin/env bash
# A single-node Slurm for the integration tests (tests/slurm_cluster.rs).
#
#   scripts/services/slurm.sh up     install (Debian packages) and start munged, slurmctld and
#                                    slurmd on 127.0.0.1; print the `export` lines the tests read
#   scripts/services/slurm.sh down   stop the daemons this script started
#
# The node has two fake GPUs (`Gres=gpu:fake:2` backed by /dev/tty0 and /dev/tty1), so
# `sbatch --gres=gpu:1` sets CUDA_VISIBLE_DEVICES per job as on a real GPU node. No accounting
# (sacct is unavailable, as on many small clusters), no cgroups, no systemd: it runs as root in
# a container. Everything lives in $ASYMFLOW_SLURM_DIR (default /tmp/asymflow-slurm); the
# system's /etc/slurm is never touched: clients find the configuration through SLURM_CONF.
#
# `up` is idempotent and always exits 0; when Slurm cannot start it prints one line
# `slurm: unavailable (reason)` on stderr and no exports, and the tests skip.
set -uo pipefail

dir="${ASYMFLOW_SLURM_DIR:-/tmp/asymflow-slurm}"
conf="$dir/slurm.conf"

unavailable() {
    echo "slurm: unavailable ($*)" >&2
    exit 0
}

exports() {
    echo "export SLURM_CONF=$conf"
    echo "export ASYMFLOW_TEST_SLURM=$dir"
}

node_ready() {
    local state
    state="$(SLURM_CONF="$conf" sinfo -h -n localhost -o %T 2>/dev/null | head -n1)"
    [[ "$state" == idle* || "$state" == mixed* || "$state" == allocated* ]]
}

stop_pidfile() {
    local file="$1" pid
    [[ -f "$file" ]] || return 0
    pid="$(cat "$file" 2>/dev/null)"
    if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$file"
}

install_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v sbatch >/dev/null && command -v munged >/dev/null && return 0
    command -v apt-get >/dev/null || return 1
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge \
        >"$dir/apt.log" 2>&1 \
        || { apt-get update -q >>"$dir/apt.log" 2>&1 \
            && apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge \
                >>"$dir/apt.log" 2>&1; }
}

start_munge() {
    if [[ -S /run/munge/munge.socket.2 ]] && munge -n </dev/null >/dev/null 2>&1; then
        return 0
    fi
    mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
    if [[ ! -s /etc/munge/munge.key ]]; then
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
        fi
    fi
    local user=root
    id munge >/dev/null 2>&1 && user=munge
    chown -R "$user" /etc/munge /run/munge /var/lib/munge /var/log/munge
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    chmod 0400 /etc/munge/munge.key
    if [[ "$user" == munge ]]; then
        runuser -u munge -- munged >"$dir/munged.out" 2>&1
    else
        munged --force >"$dir/munged.out" 2>&1
    fi
    touch "$dir/munged.ours"
    for _ in $(seq 50); do
        munge -n </dev/null >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

write_config() {
    local cpus mem
    cpus="$(nproc)"
    mem="$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)"
    mkdir -p "$dir/state" "$dir/spool"
    cat >"$conf" <<EOF
# Written by scripts/services/slurm.sh: a single node with two fake GPUs, for tests.
ClusterName=asymflow-test
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:fake:2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$dir/gres.conf" <<EOF
Name=gpu Type=fake File=/dev/tty[0-1]
EOF
}

up() {
    mkdir -p "$dir" || unavailable "cannot create $dir"
    if command -v sinfo >/dev/null && [[ -f "$conf" ]] && node_ready; then
        exports
        exit 0
    fi
    [[ "$(id -u)" == 0 ]] || unavailable "the test set-up needs root to start slurmctld and slurmd"
    install_packages || unavailable "could not install slurmctld slurmd slurm-client munge (see $dir/apt.log)"
    [[ -e /dev/tty0 && -e /dev/tty1 ]] || unavailable "no /dev/tty0 and /dev/tty1 for the fake GPUs"
    start_munge || unavailable "munged did not start (see $dir/munged.out)"
    stop_pidfile "$dir/slurmd.pid"
    stop_pidfile "$dir/slurmctld.pid"
    write_config
    SLURM_CONF="$conf" slurmctld -i >"$dir/slurmctld.out" 2>&1 \
        || unavailable "slurmctld did not start (see $dir/slurmctld.log)"
    SLURM_CONF="$conf" slurmd -N localhost >"$dir/slurmd.out" 2>&1 \
        || unavailable "slurmd did not start (see $dir/slurmd.log)"
    for i in $(seq 100); do
        node_ready && break
        if (( i % 20 == 0 )); then
            SLURM_CONF="$conf" scontrol update nodename=localhost state=resume >/dev/null 2>&1
        fi
        sleep 0.3
    done
    node_ready || unavailable "the node did not become idle (see $dir/slurmctld.log and $dir/slurmd.log)"
    exports
}

down() {
    stop_pidfile "$dir/slurmd.pid"
    stop_pidfile "$dir/slurmctld.pid"
    if [[ -f "$dir/munged.ours" ]]; then
        stop_pidfile /run/munge/munged.pid
        rm -f "$dir/munged.ours"
    fi
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
