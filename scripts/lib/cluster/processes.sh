# Starting, watching and stopping the e2e cluster's processes. Sourced by scripts/cluster; expects
# CLUSTER_DIR, CACHE and COMPONENTS.
#
# Each component NAME has, under $CLUSTER_DIR:
#   cmd/NAME        its command line, NUL-separated, so that `start NAME` runs it again as it was
#   pids/NAME.pid   the pid of its process, which leads its own session and process group
#   logs/NAME.log   its stdout and stderr (appended to across restarts)

# free_ports N: N distinct free TCP ports on 127.0.0.1, one a line. The sockets stay bound until
# all are picked, so that the kernel cannot hand out the same port twice.
free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
EOF
}

# save_command NAME ARGS...: records the command line that start_component runs.
save_command() {
    local name=$1
    shift
    mkdir -p "$CLUSTER_DIR/cmd"
    printf '%s\0' "$@" >"$CLUSTER_DIR/cmd/$name"
}

# save_wrapper NAME ARGS...: records a command that start_component runs NAME's command through
# (it ends by exec'ing its arguments, so that NAME keeps the pid and its recorded command line).
save_wrapper() {
    local name=$1
    shift
    mkdir -p "$CLUSTER_DIR/wrap"
    printf '%s\0' "$@" >"$CLUSTER_DIR/wrap/$name"
}

# component_pid NAME: prints the pid of NAME and succeeds when it runs. A pid is only taken as
# NAME's when its command line is still the recorded one, so that a pid the kernel reused after a
# crash (even for the same binary of another cluster) is never signalled.
component_pid() {
    local name=$1 pid
    [[ -f "$CLUSTER_DIR/pids/$name.pid" ]] || return 1
    pid=$(<"$CLUSTER_DIR/pids/$name.pid")
    local running
    running=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    [[ "$running" == "$(tr '\0' '\n' <"$CLUSTER_DIR/cmd/$name")" ]] || return 1
    echo "$pid"
}

# start_component NAME: starts NAME's recorded command (through its wrapper, if it has one) in a
# new session (setsid), so that `stop`
# can signal its whole process group and so that it outlives this script. Before the exec, it
# closes every inherited fd but 0-2: this script's lock (fd 9, see scripts/cluster), or a pipe of
# the caller's, would stay open as long as the component runs. It also writes its own pid: setsid
# forks when it is already a group leader, and then $! would be setsid's pid.
start_component() {
    local name=$1
    local -a args wrapper=()
    mapfile -d '' -t args <"$CLUSTER_DIR/cmd/$name"
    if [[ -f "$CLUSTER_DIR/wrap/$name" ]]; then
        mapfile -d '' -t wrapper <"$CLUSTER_DIR/wrap/$name"
    fi
    mkdir -p "$CLUSTER_DIR/pids" "$CLUSTER_DIR/logs"
    local pid_file="$CLUSTER_DIR/pids/$name.pid"
    rm -f "$pid_file"
    echo "--- $(date -u +%Y-%m-%dT%H:%M:%SZ) start: ${args[*]}" >>"$CLUSTER_DIR/logs/$name.log"
    # shellcheck disable=SC2016 # expanded by the inner bash
    setsid bash -c '
        for fd in /proc/$$/fd/*; do
            fd=${fd##*/}
            if ((fd > 2)); then exec {fd}>&-; fi
        done
        echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pid_file" "${wrapper[@]}" "${args[@]}" \
        </dev/null >>"$CLUSTER_DIR/logs/$name.log" 2>&1 &
    # Out of this shell's jobs: no "Killed" report when it dies while this script runs.
    disown "$!"
    # Until the exec: before it, the pid is bash's, which component_pid does not take as NAME's.
    local waited=0
    until component_pid "$name" >/dev/null; do
        if [[ -f "$pid_file" && ! -e /proc/$(<"$pid_file") ]] || ((waited++ > 200)); then
            echo "$name did not start" >&2
            return 1
        fi
        sleep 0.05
    done
}

# group_alive PGID: whether a process of group PGID still runs (zombies excepted).
group_alive() {
    ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# stop_component NAME: SIGTERM to NAME's process group, then SIGKILL if anything of it is left
# after 10 s. Succeeds when NAME was not running; fails when the group outlives SIGKILL (a
# process stuck in the kernel), so that `down` keeps the folder.
stop_component() {
    local name=$1 pid
    if ! pid=$(component_pid "$name"); then
        rm -f "$CLUSTER_DIR/pids/$name.pid"
        return 0
    fi
    echo "stopping $name (pid $pid)" >&2
    kill -TERM -- "-$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while group_alive "$pid" && ((SECONDS < deadline)); do
        sleep 0.1
    done
    if group_alive "$pid"; then
        echo "$name still runs after 10 s: SIGKILL" >&2
        kill -KILL -- "-$pid" 2>/dev/null || true
        deadline=$((SECONDS + 5))
        while group_alive "$pid"; do
            if ((SECONDS >= deadline)); then
                echo "$name (process group $pid) survived SIGKILL for 5 s" >&2
                return 1
            fi
            sleep 0.1
        done
    fi
    rm -f "$CLUSTER_DIR/pids/$name.pid"
}

# stray_pids: processes of the cache's binaries whose command line names this cluster's folder,
# which a pid file no longer points at (an `up` killed between starting a process and recording
# it, or a removed pid file). `down` stops them too so that it never leaves a process behind.
stray_pids() {
    local proc cmdline
    for proc in /proc/[0-9]*; do
        cmdline=$(tr '\0' ' ' 2>/dev/null <"$proc/cmdline") || continue
        [[ "$cmdline" == "$CACHE/"* && "$cmdline" == *"$CLUSTER_DIR/"* ]] && echo "${proc#/proc/}"
    done
    return 0
}

# log_tail NAME: the end of NAME's log, for failures.
log_tail() {
    local name=$1
    echo "--- last lines of $CLUSTER_DIR/logs/$name.log:" >&2
    tail -n 40 "$CLUSTER_DIR/logs/$name.log" >&2 2>/dev/null || echo "(no log)" >&2
}

# wait_until DESCRIPTION TIMEOUT COMMAND...: polls COMMAND until it succeeds; fails after TIMEOUT
# seconds, or at once when a component died (it has a pid file, which `stop` removes, but no
# longer runs), so that a crash is not waited out.
wait_until() {
    local description=$1 timeout=$2
    shift 2
    local deadline=$((SECONDS + timeout)) name
    until "$@" >/dev/null 2>&1; do
        for name in "${COMPONENTS[@]}"; do
            if [[ -f "$CLUSTER_DIR/pids/$name.pid" ]] && ! component_pid "$name" >/dev/null; then
                echo "$name exited while waiting for $description" >&2
                return 1
            fi
        done
        if ((SECONDS >= deadline)); then
            echo "timed out after $timeout s waiting for $description" >&2
            return 1
        fi
        sleep 0.25
    done
}
