#!/usr/bin/env bash
# Runs a command against a private pcscd with six vpcd virtual readers, then stops that pcscd.
#
#   scripts/pcscd-harness.sh swift test --scratch-path .build-pcsc --filter PCSCTransportTests
#
# What it does:
#   1. writes a reader.conf.d into a temporary directory with three vpcd entries, each pointing at its own copy
#      of libifdvpcd.so (entries sharing one LIBPATH share the driver's static state and clash), giving six
#      readers (vpcd has two slots per entry; slot n listens on CHANNELID + n):
#        Virtual PCD 00 00   → 35963   Virtual PCD 00 01   → 35964   (CHANNELID 0x8C7B)
#        Virtual PCD B 00 00 → 35979   Virtual PCD B 00 01 → 35980   (CHANNELID 0x8C8B)
#        Virtual PCD C 00 00 → 35995   Virtual PCD C 00 01 → 35996   (CHANNELID 0x8C9B)
#      pcscd 1.9.9 names serial readers "<FRIENDLYNAME> 00 <slot>" without making the names unique, so every
#      entry needs its own FRIENDLYNAME.
#   2. starts `pcscd -f -c DIR` (with --disable-polkit when this pcscd was built with polkit) and waits up to
#      10 s for /run/pcscd/pcscd.comm;
#   3. runs the command with these variables exported:
#        PROXIMA_PCSCD=1                  live PC/SC tests may run
#        PROXIMA_VPCD_PORTS=35963,…       the vpcd ports, in reader order
#        PROXIMA_VPCD_READERS=Virtual PCD 00 00,…   the reader names, same order as the ports
#        PROXIMA_PCSCD_CONFIG_DIR=DIR     the reader.conf.d pcscd was started with (to restart it alike)
#        PROXIMA_PCSCD_DISABLE_POLKIT=1   set when pcscd had to be started with --disable-polkit (start it alike)
#   4. on exit (also on failure, Ctrl-C or SIGTERM, which it passes on to the command and the command's children)
#      stops every pcscd that runs with DIR, by PID, and removes DIR.
#
# The daemon socket path is fixed at pcscd's build time, so only one pcscd can run per machine: the harness
# refuses to start, saying how to stop it, when a pcscd it did not start is running or systemd's pcscd.socket
# holds /run/pcscd/pcscd.comm (socket activation starts Debian's pcscd on the first client). Set PCSCD_LOG=FILE
# to keep pcscd's log (default: printed only when pcscd fails to start). The exit status is the command's.
set -euo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGUMENT…]" >&2
    exit 64
fi

readonly socket=/run/pcscd/pcscd.comm
readonly pidfile=/run/pcscd/pcscd.pid
readonly driver=/usr/lib/pcsc/drivers/serial/libifdvpcd.so
readonly channels=(0x8C7B 0x8C8B 0x8C9B)
readonly friendly_names=("Virtual PCD" "Virtual PCD B" "Virtual PCD C")

command -v pcscd >/dev/null || { echo "pcscd-harness: pcscd is not installed (apt-get install pcscd)" >&2; exit 69; }
[[ -e $driver ]] || { echo "pcscd-harness: $driver is missing (apt-get install vsmartcard-vpcd)" >&2; exit 69; }

# Running and not a zombie (a zombie still answers kill -0 until its new parent reaps it).
alive() {
    [[ -d /proc/$1 && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# Refuse when another pcscd serves, or will serve, the one socket path.
systemd_running=false
[[ -d /run/systemd/system ]] && systemd_running=true
if $systemd_running && systemctl is-active --quiet pcscd.socket pcscd.service 2>/dev/null; then
    echo "pcscd-harness: systemd's pcscd (pcscd.socket / pcscd.service) holds $socket; the tests need a pcscd" >&2
    echo "pcscd-harness: of their own. Stop it first: sudo systemctl stop pcscd.socket pcscd.service" >&2
    echo "pcscd-harness: (start it again after with: sudo systemctl start pcscd.socket)" >&2
    exit 75
fi
foreign=()
for pid in $(pgrep -x pcscd || true); do
    if alive "$pid"; then foreign+=("$pid"); fi
done
owner=$(tr -cd '0-9' 2>/dev/null <"$pidfile" || true)
if [[ -e $socket && -n $owner ]] && alive "$owner" && [[ " ${foreign[*]} " != *" $owner "* ]]; then
    foreign+=("$owner")
fi
if ((${#foreign[@]} > 0)); then
    harnessed=false
    for pid in "${foreign[@]}"; do
        cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)
        echo "pcscd-harness: a pcscd this script did not start is running: PID $pid: $cmdline" >&2
        if [[ $cmdline == *proxima-pcscd.* ]]; then harnessed=true; fi
    done
    if $harnessed; then
        # Its reader.conf.d is one of ours: another run of this harness (a `make test` in progress) owns it.
        echo "pcscd-harness: it belongs to another run of this harness (a test run in progress?); wait for that" \
            "run to end, or, if none is running any more, stop it: kill ${foreign[*]}" >&2
    elif $systemd_running; then
        echo "pcscd-harness: stop it first: sudo systemctl stop pcscd.socket pcscd.service (or kill ${foreign[*]})" >&2
    else
        # Without systemd nothing starts pcscd by itself: this one is left from an earlier run (killed before
        # its cleanup) or was started by hand.
        echo "pcscd-harness: no systemd here, so it was left by an earlier run or started by hand;" \
            "stop it first: kill ${foreign[*]}" >&2
    fi
    exit 75
fi

dir=$(mktemp -d -t proxima-pcscd.XXXXXX)
pcscd_pid=

# Every pcscd whose command line names our private config directory: the one started below, and any a test
# started again after stopping it (the restart test). Matching on DIR never touches another pcscd.
our_pcscds() {
    local pid
    for pid in $(pgrep -x pcscd || true); do
        if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir"; then
            echo "$pid"
        fi
    done
}

stop_pcscd() {
    local pids pid tries owner
    pids="$pcscd_pid $(our_pcscds)"
    owner=$(tr -cd '0-9' 2>/dev/null <"$pidfile" || true)
    for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $pids; do
        tries=0
        while alive "$pid" && ((tries < 50)); do
            sleep 0.1
            tries=$((tries + 1))
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    # A pcscd that had to be killed leaves its socket and PID file behind; remove them when they were ours.
    if [[ -n $owner ]] && [[ " $pids " == *" $owner "* ]] && ! alive "$owner"; then
        rm -f "$socket" "$pidfile"
    fi
}

command_pid=

# The command and every process below it (test runners spawn workers, and the restart tests spawn pcscd).
command_tree() {
    local child
    echo "$1"
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null || true); do command_tree "$child"; done
}

# Stops the command when the harness is interrupted: SIGTERM to the whole tree (a non-interactive shell starts
# background commands with SIGINT ignored, so Ctrl-C alone would not reach them), SIGKILL after 5 s.
stop_command() {
    local pids tries=0
    [[ -n $command_pid ]] && alive "$command_pid" || return 0
    pids=$(command_tree "$command_pid")
    kill -TERM $pids 2>/dev/null || true
    while alive "$command_pid" && ((tries < 50)); do
        sleep 0.1
        tries=$((tries + 1))
    done
    kill -KILL $(command_tree "$command_pid") 2>/dev/null || true
}

cleanup() {
    local status=$?
    stop_command
    stop_pcscd
    if [[ -n ${PCSCD_LOG:-} && -e $dir/pcscd.log ]]; then cp "$dir/pcscd.log" "$PCSCD_LOG"; fi
    rm -rf "$dir"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir "$dir/reader.conf.d"
ports=()
names=()
for i in "${!channels[@]}"; do
    channel=${channels[$i]}
    copy="$dir/libifdvpcd-$i.so"
    cp "$driver" "$copy"
    cat >"$dir/reader.conf.d/vpcd-$i" <<EOF
FRIENDLYNAME "${friendly_names[$i]}"
DEVICENAME   /dev/null:$channel
LIBPATH      $copy
CHANNELID    $channel
EOF
    for slot in 0 1; do
        ports+=($((channel + slot)))
        names+=("${friendly_names[$i]} 00 0$slot")
    done
done

flags=(-f -c "$dir/reader.conf.d")
if pcscd --version 2>&1 | grep -qi polkit; then
    flags+=(--disable-polkit)
    export PROXIMA_PCSCD_DISABLE_POLKIT=1
fi
pcscd "${flags[@]}" >"$dir/pcscd.log" 2>&1 &
pcscd_pid=$!

for _ in $(seq 100); do
    [[ -S $socket ]] && break
    if ! kill -0 "$pcscd_pid" 2>/dev/null; then break; fi
    sleep 0.1
done
if [[ ! -S $socket ]] || ! kill -0 "$pcscd_pid" 2>/dev/null; then
    echo "pcscd-harness: pcscd did not create $socket within 10 s; its log:" >&2
    cat "$dir/pcscd.log" >&2
    exit 70
fi

export PROXIMA_PCSCD=1
PROXIMA_VPCD_PORTS=$(IFS=,; echo "${ports[*]}")
PROXIMA_VPCD_READERS=$(IFS=,; echo "${names[*]}")
export PROXIMA_VPCD_PORTS PROXIMA_VPCD_READERS
export PROXIMA_PCSCD_CONFIG_DIR="$dir/reader.conf.d"

# In the background, so that a signal to the harness is handled at once (bash runs traps only between
# foreground commands) and passed on by cleanup.
set +e
"$@" <&0 &
command_pid=$!
wait "$command_pid"
status=$?
set -e
exit "$status"
