# backupctl — the two commands of the README, plus benchmarks and formatting.
SWIFT ?= swift
BIN_DEBUG = .build/debug/backupctl
PREFIX ?= /usr/local
BINDIR = $(DESTDIR)$(PREFIX)/bin

.PHONY: deps build demo test bench format lint install uninstall

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Run the console on its embedded default: a seeded sandbox tenant in a demo store.
demo: build
	$(BIN_DEBUG) demo

## Install a release build as $(PREFIX)/bin/backupctl (PREFIX=/usr/local by default;
## `make install PREFIX=$$HOME/.local` needs no root).
install: deps
	$(SWIFT) build -c release --product backupctl
	install -d "$(BINDIR)"
	install -m 0755 .build/release/backupctl "$(BINDIR)/backupctl"

uninstall:
	rm -f "$(BINDIR)/backupctl"

## Run every test (Swift Testing, one target per module), with a private PostgreSQL 15 cluster
## (scripts/pg-test-cluster.sh: installed when missing, started on a loopback port, always removed).
## At most TEST_WIDTH test cases run at once: unbounded, all ~650 share two cores, and a test's
## in-process server can wait seconds for a turn (more than a client's deadline) while the
## whole run is no faster (measured: 396 s unbounded, 222 s at 8, idle, two cores).
TEST_WIDTH ?= 8
test: deps
	$(SWIFT) build --build-tests
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) \
		./scripts/pg-test-cluster.sh run -- $(SWIFT) test --skip-build

## Benchmarks: JSON figures on stdout, each beside a reference measured in the same run.
bench: deps
	./scripts/install-deps.sh --wrk
	$(SWIFT) build -c release --product backupctl
	$(SWIFT) build -c release --product backupctl-bench
	./scripts/pg-test-cluster.sh run -- .build/release/backupctl-bench

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests Benchmarks

lint:
	$(SWIFT) format lint --recursive Sources Tests Benchmarks
