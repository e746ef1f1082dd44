#!/usr/bin/env bash
# Runs the test suites that need libusb under umockdev (CCIDUmockdevTests: the CCID transport against CCID readers
# emulated by Tests/CCIDReaderMock) in a process started by umockdev-wrapper, which preloads libumockdev-preload so
# the testbed's /dev/bus/usb and /sys replace the real ones. They run apart from the rest: the testbed redirects
# /dev for the whole process. Elsewhere they skip themselves. Needs a build with the tests (swift build --build-tests).
#
#   scripts/umockdev-tests.sh [extra swift test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v umockdev-wrapper >/dev/null; then
    echo "umockdev-tests: umockdev-wrapper not found (Debian package umockdev; scripts/ensure-deps.sh test)" >&2
    exit 1
fi
exec umockdev-wrapper "${SWIFT:-swift}" test --skip-build --filter CCIDUmockdevTests "$@"
