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
#   4. on exit (also on failure or Ctrl-C) stops every pcscd that runs with DIR, by PID, and removes DIR.
#
# The daemon socket path is fixed at pcscd's build time, so only one pcscd can run per machine: the harness
# refuses to start when a pcscd it did not start already holds /run/pcscd/pcscd.comm. Set PCSCD_LOG=FILE to
# keep pcscd's log (default: printed only when pcscd fails to start). The exit status is the command's.
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

if [[ -e $socket ]]; then
    other=$(tr -cd '0-9' <"$pidfile" 2>/dev/null || true)
    if [[ -n $other ]] && [[ -d /proc/$other && $(awk '{print $3}' "/proc/$other/stat" 2>/dev/null) != Z ]]; then
        echo "pcscd-harness: a pcscd this script did not start (PID $other) already serves $socket." >&2
        echo "pcscd-harness: stop it first (systemctl stop pcscd.socket pcscd.service, or kill $other)." >&2
        exit 75
    fi
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

# Running and not a zombie (a zombie still answers kill -0 until its new parent reaps it).
alive() {
    [[ -d /proc/$1 && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

stop_pcscd() {
    local pids pid tries owner
    pids="$pcscd_pid $(our_pcscds)"
    owner=$(tr -cd '0-9' <"$pidfile" 2>/dev/null || true)
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

cleanup() {
    local status=$?
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
if pcscd --version 2>&1 | grep -qi polkit; then flags+=(--disable-polkit); fi
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

set +e
"$@"
status=$?
set -e
exit "$status"
