#!/usr/bin/env bash
# Builds each libFuzzer target with the fuzzer and address sanitizers and runs it for a fixed time on its corpus.
# Usage: scripts/fuzz.sh SECONDS TARGET...    A crash leaves its input in Fuzz/artifacts/ and fails the run.
set -euo pipefail
seconds=$1
shift
for target in "$@"; do
    swift build --product "$target" --sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address \
        --build-path .build-fuzz 2>&1 \
        | grep -v 'prohibited flag' | tail -n 3
done
mkdir -p Fuzz/artifacts
for target in "$@"; do
    corpus="Fuzz/corpus/$(echo "${target#Fuzz}" | tr 'A-Z' 'a-z')"
    mkdir -p "$corpus"
    log=$(mktemp)
    # New inputs go to a scratch corpus (libFuzzer writes to the first folder); the seeds stay as committed.
    scratch=$(mktemp -d)
    echo "fuzz: $target for ${seconds}s on $corpus"
    if ! ".build-fuzz/debug/$target" -max_total_time="$seconds" -max_len=8192 -print_final_stats=1 \
        -artifact_prefix=Fuzz/artifacts/ "$scratch" "$corpus" >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz: $target FAILED (input saved under Fuzz/artifacts/)"
        exit 1
    fi
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log" | sed "s/^/fuzz: $target /"
    rm -rf "$log" "$scratch"
done
