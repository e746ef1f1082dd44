#!/usr/bin/env bash
# Runs a command with the services the tests need, and stops them after, whatever the command's outcome:
#
#   - pcscd with six vsmartcard vpcd readers (scripts/pcscd-harness.sh), so the live PC/SC suites
#     (PCSCTransportTests, IntegrationTests) run against the real daemon instead of skipping themselves;
#     PROXIMA_PCSCD_RESTART_TEST=1 lets the tests that kill and restart pcscd run too (they hold an exclusive lock
#     meanwhile, so no other live test sees the outage).
#
# The harness refuses, saying how to stop it, when another pcscd holds /run/pcscd/pcscd.comm (Debian's
# pcscd.socket on a systemd host, or a pcscd left by an earlier run). Set PROXIMA_NO_PCSCD=1 to run the command
# without pcscd: the live tests then skip themselves.
#
#   scripts/with-test-services.sh swift test --skip-build
set -uo pipefail

if [[ ${PROXIMA_NO_PCSCD:-} == 1 ]]; then
    exec "$@"
fi
export PROXIMA_PCSCD_RESTART_TEST=1
exec "$(dirname "$0")/pcscd-harness.sh" "$@"
