#!/usr/bin/env bash
# Runs a test command with an upper bound on its wall time, so a hung test run fails CI with what it was doing
# instead of waiting out CI's 90 minutes:
#
#   scripts/test-watchdog.sh SECONDS LOG -- swift test --skip-build ...
#
# The command's output goes to stdout and is appended to LOG. After SECONDS, the watchdog prints the tests that
# had started and not finished (from Swift Testing's "◇ … started." and "✔/✘ … passed/failed" lines in LOG), the
# backtraces of every thread of the test process when gdb is installed, then kills the command and exits 124.
# The bound is generous: it turns a hang into a failure, it is no timing assertion.
set -uo pipefail

limit=$1
log=$2
shift 2
[[ ${1:-} == -- ]] && shift

mkdir -p "$(dirname "$log")"
# tee gets the output through a descriptor of its own, so that the watchdog can wait for it: the log is whole when
# this script exits (the next step of make test scans it).
exec {output}> >(tee -a "$log")
tee_pid=$!
set -m  # the command gets a process group of its own, so it can be killed with its children
"$@" >&"$output" 2>&1 &
command_pid=$!
set +m
exec {output}>&-

deadline=$((SECONDS + limit))
while kill -0 "$command_pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
        {
            echo "test-watchdog: '$*' still runs after ${limit} s; the tests that started and did not finish:"
            # A test line reads '◇ Test "name" started.' or '◇ Test name() started.'; its end '✔ Test … passed …',
            # '✘ Test … failed …' or '➜ Test … skipped …'.
            sed -n '/^◇ Test case /d; s/^◇ \(Test .*\) started\.$/\1/p; s/^◇ \(Suite .*\) started\.$/\1/p' "$log" \
                | sort -u \
                > /tmp/test-watchdog.started.$$
            sed -n 's/ with [0-9]* test cases\( passed\| failed\)/\1/; s/^[✔✘➜] \(Test .*\) \(passed\|failed\|skipped\).*$/\1/p; s/^[✔✘➜] \(Suite .*\) \(passed\|failed\|skipped\).*$/\1/p' \
                "$log" | sort -u > /tmp/test-watchdog.ended.$$
            comm -23 /tmp/test-watchdog.started.$$ /tmp/test-watchdog.ended.$$ | sed 's/^/  /'
            rm -f /tmp/test-watchdog.started.$$ /tmp/test-watchdog.ended.$$
            for pid in $(pgrep -g "$command_pid" -f '\.xctest|swiftpm-testing-helper'); do
                if command -v gdb > /dev/null; then
                    echo "test-watchdog: threads of $pid:"
                    gdb -p "$pid" -batch -ex 'thread apply all bt 30' 2>&1 | grep -E '^(Thread|#)' | head -400
                else
                    echo "test-watchdog: gdb is not installed; no backtraces of $pid"
                fi
            done
        } 2>&1 | tee -a "$log"
        # The test process first, so that a wrapper such as the pcscd harness sees its command end and stops
        # what it started; the whole group only if that is not enough.
        pkill -KILL -g "$command_pid" -f '\.xctest' 2>/dev/null
        for _ in $(seq 1 15); do
            kill -0 "$command_pid" 2>/dev/null || break
            sleep 2
        done
        kill -KILL -- "-$command_pid" 2>/dev/null
        wait "$command_pid" 2>/dev/null
        wait "$tee_pid" 2>/dev/null
        exit 124
    fi
    sleep 2
done
wait "$command_pid"
status=$?
wait "$tee_pid"
exit "$status"
