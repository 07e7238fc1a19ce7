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

.PHONY: all setup build release test unit-test integration-test demo install uninstall clean deb test-deb

all: build

setup:
	bash scripts/setup.sh

build:
	$(SWIFT) build

# The Swift standard library linked statically (and stripped): the Pi needs no Swift runtime. The other flags keep the
# idle daemon's memory down (docs/MEMORY.md has the measurements): lld with packed relative relocations (DT_RELR,
# glibc 2.36+) instead of 1 MB of relocation entries read at every start; no exported symbols (nothing looks them up,
# they cost 600 KB of symbol tables); libgcc and libstdc++ linked in rather than mapped as shared libraries; and the
# functions the daemon runs packed together (scripts/release/symbol-order.txt), so it maps 3 MB less of its code; and
# `.rodata` kept out of the writable segment (scripts/release/writable-rodata.ld), so the start-up trim can drop it.
RELEASE_CXX_DIR := $(CURDIR)/.build/static-libstdc++
RELEASE_FLAGS = -c release --static-swift-stdlib \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic \
	-Xswiftc -Xclang-linker -Xswiftc -static-libgcc -Xswiftc -L$(RELEASE_CXX_DIR) \
	-Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xlinker --symbol-ordering-file=$(CURDIR)/scripts/release/symbol-order.txt -Xlinker --no-warn-symbol-ordering \
	-Xlinker -T -Xlinker $(CURDIR)/scripts/release/writable-rodata.ld

release: release-prep
	$(SWIFT) build $(RELEASE_FLAGS) -Xlinker -s

# The Swift driver always asks for -lstdc++; a libstdc++.a found first (the toolchain clang's own) makes that static.
# Without one the link falls back to the shared library.
.PHONY: release-prep print-release-flags
release-prep:
	@mkdir -p $(RELEASE_CXX_DIR); archive="$$("$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/clang" \
		-print-file-name=libstdc++.a 2>/dev/null)"; \
	if [ -f "$$archive" ]; then ln -sfn "$$archive" $(RELEASE_CXX_DIR)/libstdc++.a; \
	else rm -f $(RELEASE_CXX_DIR)/libstdc++.a; fi

print-release-flags:
	@echo $(RELEASE_FLAGS)

unit-test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

integration-test: setup build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)

# The whole suite, as CI runs it (~30 min): unit, integration, unit-file check, fuzz smoke, the Debian package (lintian
# and an install in a fresh Debian 12), real BlueZ in QEMU run by the package's binary, and a 10-minute fault soak of
# the release build (TEST_SOAK_SECONDS). The package is made from the soak's release build (same flags), so the
# suite compiles the release configuration once.
TEST_SOAK_SECONDS ?= 600

test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)
	$(MAKE) test-adverts
	$(MAKE) test-homeassistant
	bash scripts/check-unit.sh
	$(MAKE) fuzz-smoke
	$(MAKE) test-deb DEB_BIN_TARGET=bench-build DEB_BIN=$(BENCH_BIN)
	$(MAKE) test-realbluez-deb DEB_BIN_TARGET=bench-build DEB_BIN=$(BENCH_BIN) REALBLUEZ_PRIVACY=0
	$(MAKE) bench-fleet
	$(MAKE) soak DURATION=$(TEST_SOAK_SECONDS)

# The broadcast decoders against Home Assistant's reference parsers (bthome-ble, xiaomi-ble, govee-ble, ruuvitag-ble)
# in their own venv, .venv-adverts (created on first use: ~1 min), on the packets of the references' test suites and
# on generated ones (ADVERTS_GENERATED per format, default 10000); prints the counts compared (docs/adverts.md).
.PHONY: test-adverts
test-adverts: build
	bash scripts/adverts/setup.sh
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge .venv-adverts/bin/python -m pytest Tests/adverts -q -p no:logging $(PYTEST_ARGS)

# The discovery against a real Home Assistant core (2024.3) in its own venv, .venv-ha (created on first use: ~5 min,
# ~400 MB; Python 3.11 or 3.12, PYTHON_HA=… to choose it).
.PHONY: test-homeassistant
test-homeassistant: setup build
	bash scripts/homeassistant/setup.sh
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/homeassistant -q $(PYTEST_ARGS)

# gattbridge against the real bluetoothd and kernel in a QEMU guest (docs/REAL-BLUEZ.md): about 2–4 minutes.
.PHONY: test-realbluez
test-realbluez: setup build
	bash scripts/realbluez/run.sh

# The same tier run by the binary the Debian package ships (unpacked from dist/…deb): what `make test` runs, because
# that is the build users get (optimised, static Swift stdlib, stripped); the debug build is what the integration
# tests run.
.PHONY: test-realbluez-deb
test-realbluez-deb: setup deb
	rm -rf $(DEB_EXTRACT) && mkdir -p $(DEB_EXTRACT)
	dpkg-deb -x $(DEB_FILE) $(DEB_EXTRACT)
	GATTBRIDGE_BIN=$(CURDIR)/$(DEB_EXTRACT)/usr/bin/gattbridge bash scripts/realbluez/run.sh

demo: setup build
	bash scripts/demo.sh

clean:
	$(SWIFT) package clean

# --- install (sudo make install; PREFIX and DESTDIR honoured) ---------------------------------------------------
RELEASE_BIN := .build/release/gattbridge
SYSUSERSDIR ?= /etc/sysusers.d
# The system bus reads policy files from here (and reloads them by itself when one changes).
DBUSPOLICYDIR ?= /usr/share/dbus-1/system.d
# Only when the system is the target (no DESTDIR) and systemd runs: create the user, tell systemd about the unit.
ON_LIVE_SYSTEMD = [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]

# Run `make release` as yourself first; under sudo this builds only when there is no release binary yet (a build as
# root leaves root-owned files in .build).
$(RELEASE_BIN):
	$(MAKE) release

install: $(RELEASE_BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(CONFDIR) \
		$(DESTDIR)$(DBUSPOLICYDIR)
	install -m 0755 $(RELEASE_BIN) $(DESTDIR)$(BINDIR)/gattbridge
	sed -e 's|/usr/local/bin/gattbridge|$(BINDIR)/gattbridge|' -e 's|/etc/gattbridge/|$(CONFDIR)/|g' \
		systemd/gattbridge.service > $(DESTDIR)$(UNITDIR)/gattbridge.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/gattbridge.service
	install -m 0644 systemd/gattbridge.sysusers $(DESTDIR)$(SYSUSERSDIR)/gattbridge.conf
	install -m 0644 systemd/gattbridge-dbus.conf $(DESTDIR)$(DBUSPOLICYDIR)/gattbridge.conf
	install -m 0644 config/gattbridge.example.yaml $(DESTDIR)$(CONFDIR)/config.example.yaml
	@if [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then echo "keeping the existing $(CONFDIR)/config.yaml"; \
	else install -m 0644 config/gattbridge.example.yaml $(DESTDIR)$(CONFDIR)/config.yaml; \
	     echo "installed $(CONFDIR)/config.yaml: edit it, then: systemctl enable --now gattbridge"; fi
	@# LoadCredential= fails the unit when its file is missing: an empty placeholder until a password is set.
	@[ -e $(DESTDIR)$(CONFDIR)/mqtt-password ] || install -m 0600 /dev/null $(DESTDIR)$(CONFDIR)/mqtt-password
	@if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/gattbridge.conf; fi
	@if $(ON_LIVE_SYSTEMD); then systemctl daemon-reload; fi

# Removes what install put there. An edited config.yaml and a non-empty mqtt-password stay (they are yours), as do
# the user account and /var/lib/gattbridge.
uninstall:
	@if $(ON_LIVE_SYSTEMD); then systemctl disable --now gattbridge.service 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(BINDIR)/gattbridge $(DESTDIR)$(UNITDIR)/gattbridge.service \
		$(DESTDIR)$(SYSUSERSDIR)/gattbridge.conf $(DESTDIR)$(CONFDIR)/config.example.yaml \
		$(DESTDIR)$(DBUSPOLICYDIR)/gattbridge.conf
	@if cmp -s config/gattbridge.example.yaml $(DESTDIR)$(CONFDIR)/config.yaml; then \
		rm -f $(DESTDIR)$(CONFDIR)/config.yaml; \
	elif [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then echo "keeping the edited $(CONFDIR)/config.yaml"; fi
	@if [ -f $(DESTDIR)$(CONFDIR)/mqtt-password ] && [ ! -s $(DESTDIR)$(CONFDIR)/mqtt-password ]; then \
		rm -f $(DESTDIR)$(CONFDIR)/mqtt-password; fi
	@rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true
	@if $(ON_LIVE_SYSTEMD); then systemctl daemon-reload; fi

# systemd-analyze verify must be clean, the security exposure at most 1.5 and as printed in README.md, MemoryMax= set;
# the D-Bus policy well-formed, narrow, and loaded by dbus-daemon.
.PHONY: check-unit
check-unit:
	bash scripts/check-unit.sh

# --- Debian package (README "Install on a Raspberry Pi") -------------------------------------------------------------
# `make deb`: dist/gattbridge_<version>_<arch>.deb for this machine's architecture (arm64 on a Pi), from the release
# build; the version is GattBridgeVersion.swift's (scripts/deb/version.sh). `make test-deb`: lintian, then an install
# in a fresh debootstrapped Debian 12 (root, through sudo when needed; a few minutes the first time, ~1 min after).
# DEB_BIN is the binary packaged and DEB_BIN_TARGET the target that builds it.
DEB_BIN_TARGET ?= release
DEB_BIN        ?= $(RELEASE_BIN)
DEB_FILE        = dist/gattbridge_$(shell bash scripts/deb/version.sh)_$(shell dpkg --print-architecture).deb
DEB_EXTRACT    := .build-deb/extract

deb: $(DEB_BIN_TARGET)
	bash scripts/deb/build.sh $(DEB_BIN) >/dev/null

test-deb: deb
	bash scripts/deb/test.sh

# --- performance, soak, fuzzing (README "Performance") -------------------------------------------------------------
# The release build for measurements has a scratch path of its own, so it never fights a development build.
BENCH_BUILD   := .build-release
BENCH_BIN     := $(BENCH_BUILD)/release/gattbridge
FLOOR_BIN     := $(BENCH_BUILD)/floor-relay
BENCH_ARGS    ?=
DURATION      ?= 600
SOAK_ARGS     ?=

.PHONY: bench-build bench soak fuzz fuzz-smoke

bench-build: release-prep $(FLOOR_BIN)
	$(SWIFT) build $(RELEASE_FLAGS) -Xlinker -s --scratch-path $(BENCH_BUILD)

# The floor relay gattbridge is measured against (bench/floor/relay.c; README "Performance").
$(FLOOR_BIN): bench/floor/relay.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -o $@ $< $$(pkg-config --cflags --libs dbus-1 libmosquitto)

# Table on stdout, JSON in .bench/latest.json. BENCH_ARGS=--quick for a short smoke run of the benchmark itself;
# BENCH_ARGS=--no-floor leaves out the floor relay.
bench: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) FLOOR_RELAY_BIN=$(CURDIR)/$(FLOOR_BIN) \
		$(PYTHON) scripts/bench/run_bench.py $(BENCH_ARGS)
	$(MAKE) bench-fleet

# The fleet at scale (README "Several bridges"): 3 bridges x 30 simulated peripherals on one BlueZoo and broker,
# every device owned once, then the time from an owner's SIGKILL to its devices online elsewhere (~15 s; part of
# make test, exit 1 when a check fails). FLEET_ARGS=…
# (--devices N --bridges N --seed N). JSON in .bench/fleet-latest.json.
.PHONY: bench-fleet
bench-fleet: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/bench/fleet_scale.py $(FLEET_ARGS)

# Where the CPU per notification goes, gattbridge beside the floor relay (scripts/bench/profile_hot_path.py):
# system calls per notification (strace, the default) or a perf profile by symbol (PROFILE_ARGS="--tool perf").
# The release build with its symbols kept, in a scratch path of its own. PROFILE_ARGS="--path sig --rate 1000".
PROFILE_BUILD := .build-profile
PROFILE_ARGS  ?=
.PHONY: profile profile-build
profile-build: release-prep $(FLOOR_BIN)
	$(SWIFT) build $(RELEASE_FLAGS) --scratch-path $(PROFILE_BUILD)

profile: setup profile-build
	GATTBRIDGE_BIN=$(CURDIR)/$(PROFILE_BUILD)/release/gattbridge FLOOR_RELAY_BIN=$(CURDIR)/$(FLOOR_BIN) \
		$(PYTHON) scripts/bench/profile_hot_path.py $(PROFILE_ARGS)

# The idle daemon's memory in a minute (`make bench` takes eight): RSS/PSS/anonymous/file and every mapping's share,
# three devices online (scripts/bench/memory.py; MEMORY_ARGS=--burst 5000 measures again after traffic).
.PHONY: memory
MEMORY_ARGS ?=
memory: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/bench/memory.py $(MEMORY_ARGS)

# make soak DURATION=600 (seconds; SOAK_DURATION works too). Exit status 1 on a crash, a loss, an unrecovered fault
# or growing RSS. Report on stdout, JSON in .bench/soak-latest.json.
soak: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/soak/soak.py --duration $(or $(SOAK_DURATION),$(DURATION)) $(SOAK_ARGS)

# libFuzzer: kept crash inputs + corpus once, then FUZZ_SECONDS (default 10) per target; the corpus is not changed.
fuzz-smoke:
	bash Fuzz/run.sh smoke

# Longer fuzzing (FUZZ_SECONDS per target, default 300); inputs that grow coverage are merged into Fuzz/Corpus.
fuzz:
	bash Fuzz/run.sh fuzz
