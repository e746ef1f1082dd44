#!/usr/bin/env bash
# Store-and-forward crash soak: the crash-safety test with more SIGKILLs than `make test` runs (default 2000).
# Usage: scripts/store-soak.sh [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-2000}"
swift build --build-tests 2>&1 | grep -v 'prohibited flag' | tail -n 1
PROXIMA_STORE_KILLS="$kills" swift test --skip-build --filter CrashSafetyTests
