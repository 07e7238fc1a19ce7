# gattbridge — build, test, demo, install.
# `make demo` and `make test` are the quick start; each does its own setup (scripts/setup.sh).

PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
UNITDIR    ?= /etc/systemd/system
CONFDIR    ?= /etc/gattbridge
SWIFT      ?= swift
PYTHON     := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: all setup build release test unit-test integration-test demo install uninstall clean

all: build

setup:
	bash scripts/setup.sh

build:
	$(SWIFT) build

release:
	$(SWIFT) build -c release --static-swift-stdlib -Xlinker -s

unit-test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

integration-test: setup build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)

test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)

demo: setup build
	bash scripts/demo.sh

clean:
	$(SWIFT) package clean
