#!/usr/bin/env bash
# Runs a command with the services the tests need, and stops them after, whatever the command's outcome.
# Today the suite needs none beyond the in-process simulator; pcscd with vpcd readers joins with the PC/SC
# transport.
set -uo pipefail
"$@"
