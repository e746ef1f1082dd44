# Proxima — the two commands that matter: `make demo` and `make test`. See README.md.
SHELL := /bin/bash
SWIFT ?= swift
# The swift-format the toolchain ships; CI lints with --strict.
SWIFT_FORMAT ?= $(SWIFT) format
WERROR := -Xswiftc -warnings-as-errors
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := FuzzBERTLV FuzzAPDU FuzzManifest FuzzEMV FuzzDriverFrame FuzzPN532 FuzzCCID FuzzCBOR FuzzCOSE \
	FuzzMdocEngagement FuzzDeviceResponse FuzzVICAL FuzzVAS FuzzSmartTap FuzzStoreBatch
SWIFT_SOURCES := Package.swift Sources Plugins Tests Benchmarks Fuzz

.PHONY: all deps test-deps build demo test lint format bench fuzz clean

all: build

deps:
	@scripts/ensure-deps.sh build

test-deps:
	@scripts/ensure-deps.sh test

build: deps
	$(SWIFT) build $(WERROR)

## The main job on the embedded default manifest: simulated readers and cards, every capability.
demo: deps
	$(SWIFT) build -c release --product proxima
	.build/release/proxima demo --config Config/proxima.json

## The whole test suite: checks that nothing points outside the repository, builds with warnings as errors,
## starts what the tests need, runs every test.
test: test-deps
	scripts/check-self-contained.sh
	$(SWIFT) build --build-tests $(WERROR)
	@mkdir -p .build/logs && rm -f .build/logs/test.log
	@# Each step is bounded (scripts/test-watchdog.sh): a hang fails with the unfinished tests and the threads'
	@# backtraces instead of waiting out CI. Quiet-machine times: about 60-70 s, 8 s and 4 s.
	scripts/test-watchdog.sh 900 .build/logs/test.log -- scripts/with-test-services.sh $(SWIFT) test --skip-build \
		--skip 'ExternalTransportTests|RemoteTransportTests'
	@# The driver-process and remote-agent suites time restarts of real child processes and TLS links: they run
	@# on their own, after the rest (beside the whole suite, the lie-restart case failed its wait once and a
	@# remote-agent case stalled once; see issues 13's notes).
	scripts/test-watchdog.sh 600 .build/logs/test.log -- $(SWIFT) test --skip-build \
		--filter 'ExternalTransportTests|RemoteTransportTests'
	SWIFT=$(SWIFT) scripts/test-watchdog.sh 300 .build/logs/test.log -- scripts/umockdev-tests.sh
	scripts/scan-for-pans.sh .build/logs/test.log var
	scripts/api-inventory.py

lint:
	$(SWIFT_FORMAT) lint --strict --recursive --configuration .swift-format $(SWIFT_SOURCES)

format:
	$(SWIFT_FORMAT) format --in-place --recursive --configuration .swift-format $(SWIFT_SOURCES)

## Benchmarks print ratios against a baseline measured in the same process.
bench: deps
	Benchmarks/run.sh

## libFuzzer smoke run of every parser of outside bytes ($(FUZZ_SECONDS) s each).
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf .build .build-fuzz
