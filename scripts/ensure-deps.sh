#!/usr/bin/env bash
# Installs what building and testing Proxima needs on Debian 12, and nothing that is already there.
# Usage: scripts/ensure-deps.sh [build|test]   (test adds the daemons and Python peers the tests drive)
set -euo pipefail
mode=${1:-build}

debs=(pkg-config time libssl-dev libpcsclite-dev libnfc-dev libusb-dev libusb-1.0-0-dev libumockdev-dev libsqlite3-dev zlib1g-dev)
if [ "$mode" = test ]; then
    debs+=(pcscd vsmartcard-vpcd libnfc-bin umockdev python3 python3-pip gcc openssl gdb)
fi

missing=()
for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "ensure-deps: installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$mode" = test ]; then
    # Python peers used by tests to cross-check our output (schema validation now; crypto peers later).
    py_missing=()
    for m in jsonschema cryptography pyhpke jwt cbor2; do
        python3 -c "import $m" 2>/dev/null || py_missing+=("$m")
    done
    if [ ${#py_missing[@]} -gt 0 ]; then
        # Module names differ from PyPI names for pyjwt.
        py_missing=("${py_missing[@]/#jwt/pyjwt[crypto]}")
        echo "ensure-deps: installing Python packages: ${py_missing[*]}"
        python3 -m pip install -q "${py_missing[@]}" 2>/dev/null \
            || python3 -m pip install -q --break-system-packages "${py_missing[@]}"
    fi
fi
