# backupctl — the two commands of the README, plus benchmarks and formatting.
SWIFT ?= swift
BIN_DEBUG = .build/debug/backupctl

.PHONY: deps build demo test bench format lint

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Run the console on its embedded default: a seeded sandbox tenant in a demo store.
demo: build
	$(BIN_DEBUG) demo

## Run every test (Swift Testing, one target per module).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## Benchmarks: JSON figures on stdout, each beside a reference measured in the same run.
bench: deps
	$(SWIFT) build -c release --product backupctl
	$(SWIFT) build -c release --product backupctl-bench
	.build/release/backupctl-bench

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests Benchmarks

lint:
	$(SWIFT) format lint --recursive Sources Tests Benchmarks
