#!/usr/bin/env bash
# Runs every benchmark in release mode. Each prints its figures as ratios against a baseline measured in the
# same process, because machines here are noisy (2 shared cores): compare ratios, not absolute times.
set -euo pipefail
cd "$(dirname "$0")/.."
# One product per build: given several --product flags, SwiftPM builds only the last.
for product in SchedulerBenchmark ExchangeBenchmark PaymentBenchmark ODABenchmark LoyaltyBenchmark StoreAndForwardBenchmark MDLBenchmark PCSCBenchmark ExternalBenchmark RemoteBenchmark LibNFCBenchmark CCIDBenchmark proxima; do
    swift build -c release --product "$product" 2>&1 | grep -v 'prohibited flag' | tail -n 1
done
echo "== Scheduler: lease + release cycles, 64 readers, 16 lanes, 1,000 requesters"
.build/release/SchedulerBenchmark
echo
echo "== Kernel overhead per APDU exchange on the simulator, air time off"
.build/release/ExchangeBenchmark
echo
echo "== Payment reads on the simulator, air time off: CPU per read per card profile, share of air time"
.build/release/PaymentBenchmark
echo
echo "== Offline data authentication (fDDA, CDA): terminal CPU per read with ODA against the same reads without"
.build/release/ODABenchmark
echo
echo "== External transport: per-APDU overhead of a driver process against the same card in-process"
.build/release/ExternalBenchmark
echo
echo "== Remote agent: per-APDU overhead of a lane-PC agent over loopback TLS 1.3 against the same card in-process"
.build/release/RemoteBenchmark
echo
echo "== mDL reader: Annex D DeviceResponse verification against a Python verifier of the same bytes"
.build/release/MDLBenchmark
echo
echo "== Loyalty taps on the simulator, air time off: VAS only and VAS + payment against payment only"
.build/release/LoyaltyBenchmark
echo
echo "== Store and forward: durable stores/s against the raw fsync rate; a 10,000-read batch built and signed"
.build/release/StoreAndForwardBenchmark
echo
echo "== Peak memory of 'proxima demo --lanes 16 --readers 64'"
/usr/bin/time -v .build/release/proxima demo --config Config/proxima.json --lanes 16 --readers 64 --taps 640 \
    --arrival-ms 20 >/dev/null 2>/tmp/proxima-demo-time.txt || { cat /tmp/proxima-demo-time.txt; exit 1; }
grep -E 'Maximum resident set size|Elapsed' /tmp/proxima-demo-time.txt
echo
echo "== libnfc transport: per-APDU overhead against nfc_initiator_transceive_bytes, PN532 emulator"
.build/release/LibNFCBenchmark
echo
if command -v umockdev-wrapper >/dev/null; then
    echo "== CCID transport: per-APDU overhead against a bare libusb bulk write/read pair, umockdev CCID reader"
    umockdev-wrapper .build/release/CCIDBenchmark
    echo
fi
# Needs pcscd and vsmartcard-vpcd (scripts/ensure-deps.sh test); the harness starts a private pcscd with six vpcd
# readers and refuses, saying how to stop it, when another pcscd runs.
if command -v pcscd >/dev/null && [[ -e /usr/lib/pcsc/drivers/serial/libifdvpcd.so ]]; then
    scripts/pcscd-harness.sh .build/release/PCSCBenchmark
else
    echo "== PC/SC benchmark skipped: needs pcscd and vsmartcard-vpcd (scripts/ensure-deps.sh test)"
fi
