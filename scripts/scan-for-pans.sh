#!/usr/bin/env bash
# Fails when any test PAN of the virtual cards (Config/cards/*.json "pan") appears in the given files: the test
# suite's whole output, logs, the data directory. Card data must never reach a log, an error or test output.
# Usage: scripts/scan-for-pans.sh FILE|DIR...
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pans < <(grep -ho '"pan"[[:space:]]*:[[:space:]]*"[0-9]\{12,19\}"' Config/cards/*.json | grep -o '[0-9]\{12,19\}' | sort -u)
if [ ${#pans[@]} -eq 0 ]; then
    echo "scan-for-pans: no test PANs found in Config/cards (the scan would prove nothing)" >&2
    exit 1
fi
found=0
for pan in "${pans[@]}"; do
    # The digits also match a hex dump of tag 5A or 57, whose BCD encoding reads as the same digits.
    if grep -rIl -e "$pan" "$@" 2>/dev/null; then
        echo "scan-for-pans: a test PAN ending ${pan: -4} appears in the files above" >&2
        found=1
    fi
done
if [ $found -ne 0 ]; then exit 1; fi
echo "scan-for-pans: none of ${#pans[@]} test PANs appears in: $*"
