# gattbridge — build, test, demo, install.
# `make demo` and `make test` are the quick start; each does its own setup (scripts/setup.sh).

PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
UNITDIR    ?= /etc/systemd/system
CONFDIR    ?= /etc/gattbridge
MANDIR     ?= $(PREFIX)/share/man
SWIFT      ?= swift
PYTHON     := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: all setup build release test unit-test integration-test demo install uninstall clean deb test-deb

# ARCH=arm64 on an amd64 machine: `make release` and `make deb` cross-build for a Raspberry Pi (64-bit OS) with the
# toolchain scripts/arm64/ installs into ARM64_CACHE (docs: the install guide). Otherwise the machine's own.
HOST_ARCH := $(shell dpkg --print-architecture 2>/dev/null || uname -m)
ARCH      ?= $(HOST_ARCH)
ifeq ($(ARCH),$(HOST_ARCH))
CROSS :=
else ifeq ($(ARCH)-$(HOST_ARCH),arm64-amd64)
CROSS := arm64
else
$(error ARCH=$(ARCH) cannot be built on $(HOST_ARCH): only arm64 is cross-built, on amd64)
endif

all: build

setup:
	bash scripts/setup.sh

build:
	$(SWIFT) build

# The Swift standard library linked statically (and stripped): the Pi needs no Swift runtime. The other flags keep the
# idle daemon's memory down (docs/dev/MEMORY.md has the measurements): lld with packed relative relocations (DT_RELR,
# glibc 2.36+) instead of 1 MB of relocation entries read at every start; no exported symbols (nothing looks them up,
# they cost 600 KB of symbol tables); libgcc and libstdc++ linked in rather than mapped as shared libraries; and the
# functions the daemon runs packed together (scripts/release/symbol-order.txt, and for the unnamed ones a linker script,
# scripts/release/unnamed-order.ld), so it maps 3 MB less of its code and keeps few pages under memory pressure; and
# `.rodata` kept out of the writable segment (scripts/release/writable-rodata.ld), where only a few writable inputs put it.
RELEASE_CXX_DIR := $(CURDIR)/.build/static-libstdc++
RELEASE_FLAGS = -c release --static-swift-stdlib \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic \
	-Xswiftc -Xclang-linker -Xswiftc -static-libgcc -Xswiftc -L$(RELEASE_CXX_DIR) \
	-Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xlinker --symbol-ordering-file=$(CURDIR)/scripts/release/symbol-order.txt -Xlinker --no-warn-symbol-ordering \
	-Xlinker -T -Xlinker $(CURDIR)/scripts/release/writable-rodata.ld \
	-Xlinker -T -Xlinker $(CURDIR)/scripts/release/unnamed-order.ld

ifeq ($(CROSS),)
release: release-prep
	$(SWIFT) build $(RELEASE_FLAGS) -Xlinker -s
else
release:
	bash scripts/arm64/build.sh >/dev/null
endif

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
	@# The arm64 cross toolchain (mostly downloads and unpacking) is prepared in the background meanwhile;
	@# test-arm64 waits for it (scripts/arm64/toolchain.sh takes a lock).
	@mkdir -p .build-arm64 && (bash scripts/arm64/toolchain.sh > .build-arm64/toolchain.log 2>&1 &)
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

integration-test: setup build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)

# The hostile-radio floods of Tests/integration/test_adverts_hostile.py at full length: 60 s each instead of the 15 s
# `make test` gives them, long enough for the bridge-wide entity rate to fill every bound (~3 min in all; not in
# `make test`, docs/developing.md).
FLOOD_SECONDS ?= 60
.PHONY: test-floods-full
test-floods-full: setup build
	GATTBRIDGE_FLOOD_SECONDS=$(FLOOD_SECONDS) GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest \
		Tests/integration/test_adverts_hostile.py -q -s -k flood $(PYTEST_ARGS)

# The whole suite, as CI runs it (within 40 min on 2 cores from a clean clone; the record: docs/developing.md): unit,
# integration, the guide's links and the config schema, the cross-build's root checks (Tests/scripts/root-plants.sh),
# the broadcast decoders against the reference parsers, Home Assistant, unit-file check, fuzz smoke, the Debian
# package (lintian and an install in a fresh Debian 12), the Raspberry Pi package (cross-built, run under qemu-user),
# real BlueZ in QEMU run by the package's binary, the fleet, and a 3-minute fault soak of the release build
# (TEST_SOAK_SECONDS; `make soak` runs the 10-minute one). The package is made from the soak's release build (same
# flags), so the suite compiles the release configuration once. Each tier's wall time is printed at the end, also
# when one fails (scripts/tier.sh).
TEST_SOAK_SECONDS ?= 180
TIER := bash scripts/tier.sh

test: setup
	@$(TIER) --start
	@$(MAKE) --no-print-directory test-tiers || { $(TIER) --summary; exit 1; }
	@$(TIER) --summary

# What is mostly downloading and unpacking (network and disk more than CPU) is prepared in the background while the
# tests compile: the arm64 cross toolchain, the venvs of the reference parsers and of Home Assistant, and the real-BlueZ
# guest's kernel and initramfs. The tier that needs one waits for it: each preparation takes a lock, and the tier runs
# it again, finding it done (or doing what a failed one left).
.PHONY: test-tiers test-prepare
test-prepare:
	@mkdir -p .build-arm64 .build
	@(bash scripts/arm64/toolchain.sh > .build-arm64/toolchain.log 2>&1 &)
	@(bash scripts/adverts/setup.sh > .build/setup-adverts.log 2>&1 &)
	@(bash scripts/homeassistant/setup.sh > .build/setup-homeassistant.log 2>&1 &)
	@(bash scripts/realbluez/prepare-guest.sh .build-realbluez > .build/prepare-guest.log 2>&1 &)
	@(bash scripts/web/setup.sh > .build/setup-web.log 2>&1 &)
	@(bash scripts/proxy/setup.sh > .build/setup-proxy.log 2>&1 &)

test-tiers: test-prepare
	$(TIER) build-tests $(SWIFT) build --build-tests
	$(TIER) unit $(SWIFT) test --skip-build
	$(TIER) integration env GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/integration -q $(PYTEST_ARGS)
	$(TIER) docs env GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/docs -q
	$(TIER) web $(MAKE) test-web
	$(TIER) proxy $(MAKE) test-proxy
	$(TIER) root-plants bash Tests/scripts/root-plants.sh
	$(TIER) adverts $(MAKE) test-adverts
	$(TIER) homeassistant $(MAKE) test-homeassistant
	$(TIER) check-unit bash scripts/check-unit.sh
	$(TIER) fuzz-smoke $(MAKE) fuzz-smoke
	$(TIER) deb $(MAKE) test-deb DEB_BIN_TARGET=bench-build DEB_BIN=$(BENCH_BIN)
	$(TIER) arm64 $(MAKE) test-arm64
	$(TIER) realbluez $(MAKE) test-realbluez-deb DEB_BIN_TARGET=bench-build DEB_BIN=$(BENCH_BIN) REALBLUEZ_PRIVACY=0
	$(TIER) realbluez-systemd $(MAKE) test-realbluez-systemd-deb DEB_BIN_TARGET=bench-build DEB_BIN=$(BENCH_BIN)
	$(TIER) fleet $(MAKE) bench-fleet
	$(TIER) soak $(MAKE) soak DURATION=$(TEST_SOAK_SECONDS)

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

# gattbridge against the real bluetoothd and kernel in a QEMU guest (docs/dev/REAL-BLUEZ.md): about 2–4 minutes.
.PHONY: test-realbluez
test-realbluez: setup build
	bash scripts/realbluez/run.sh

# The shipped unit under the real systemd (PID 1 of a guest boot of its own), its watchdog under load for 2 minutes
# (docs/dev/REAL-BLUEZ.md#the-systemd-boot): about 4–5 minutes, a boot of its own beside test-realbluez
# (REALBLUEZ_SYSTEMD=1 adds it there). The -deb variant, which `make test` runs, runs the unit and binary of the
# Debian package.
.PHONY: test-realbluez-systemd test-realbluez-systemd-deb
test-realbluez-systemd: setup build
	REALBLUEZ_SYSTEMD_ONLY=1 bash scripts/realbluez/run.sh
test-realbluez-systemd-deb: setup deb
	rm -rf $(DEB_EXTRACT) && mkdir -p $(DEB_EXTRACT)
	dpkg-deb -x $(DEB_FILE) $(DEB_EXTRACT)
	GATTBRIDGE_BIN=$(CURDIR)/$(DEB_EXTRACT)/usr/bin/gattbridge REALBLUEZ_SYSTEMD_ONLY=1 bash scripts/realbluez/run.sh

# The same tier run by the binary the Debian package ships (unpacked from dist/…deb): what `make test` runs, because
# that is the build users get (optimised, static Swift stdlib, stripped); the debug build is what the integration
# tests run.
.PHONY: test-realbluez-deb
test-realbluez-deb: setup deb
	rm -rf $(DEB_EXTRACT) && mkdir -p $(DEB_EXTRACT)
	dpkg-deb -x $(DEB_FILE) $(DEB_EXTRACT)
	GATTBRIDGE_BIN=$(CURDIR)/$(DEB_EXTRACT)/usr/bin/gattbridge bash scripts/realbluez/run.sh

# The web page in a real browser (docs/web.md): Debian's chromium, driven by Playwright, against the real bridge on the
# simulated bench (Tests/web; about a minute). scripts/web/setup.sh installs chromium when missing (~290 MB);
# GATTBRIDGE_WEB_SCREENSHOTS=1 also writes docs/web/*.png.
.PHONY: test-web
test-web: setup build
	bash scripts/web/setup.sh
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/web -q $(PYTEST_ARGS)

# The Home Assistant Bluetooth proxy (docs/home-assistant.md, "Bluetooth proxy") spoken to by Home Assistant's own
# ESPHome client, aioesphomeapi, against the real bridge on the simulated bench (Tests/proxy; under a minute), in its
# own venv, .venv-proxy (created on first use: ~30 s).
.PHONY: test-proxy
test-proxy: setup build
	bash scripts/proxy/setup.sh
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge .venv-proxy/bin/python -m pytest Tests/proxy -q $(PYTEST_ARGS)

# The guide's links and the config's JSON Schema against the validator (Tests/docs; a few seconds).
.PHONY: docs-test
docs-test: setup build
	GATTBRIDGE_BIN=$(CURDIR)/.build/debug/gattbridge $(PYTHON) -m pytest Tests/docs -q $(PYTEST_ARGS)

# The manual page, from the commands' own help (swift-argument-parser's generate-manual): .build/man/gattbridge.1.
# `man -l .build/man/gattbridge.1` reads it; `sudo make install` installs it when it exists.
MAN_PAGE := .build/man/gattbridge.1
.PHONY: man
man: build
	$(SWIFT) build --product generate-manual
	mkdir -p $(dir $(MAN_PAGE))
	.build/debug/generate-manual .build/debug/gattbridge --date $$(git log -1 --format=%cs 2>/dev/null || date -u +%F) \
		--authors 'the gattbridge authors' -o - > $(MAN_PAGE).tmp && mv $(MAN_PAGE).tmp $(MAN_PAGE)

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
	install -m 0644 config/gattbridge.schema.json $(DESTDIR)$(CONFDIR)/gattbridge.schema.json
	@if [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then echo "keeping the existing $(CONFDIR)/config.yaml"; \
	else install -m 0644 config/gattbridge.example.yaml $(DESTDIR)$(CONFDIR)/config.yaml; \
	     echo "installed $(CONFDIR)/config.yaml: edit it, then: systemctl enable --now gattbridge"; fi
	@if [ -f $(MAN_PAGE) ]; then install -D -m 0644 $(MAN_PAGE) $(DESTDIR)$(MANDIR)/man1/gattbridge.1; fi
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
		$(DESTDIR)$(CONFDIR)/gattbridge.schema.json $(DESTDIR)$(MANDIR)/man1/gattbridge.1 \
		$(DESTDIR)$(DBUSPOLICYDIR)/gattbridge.conf
	@if cmp -s config/gattbridge.example.yaml $(DESTDIR)$(CONFDIR)/config.yaml; then \
		rm -f $(DESTDIR)$(CONFDIR)/config.yaml; \
	elif [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then echo "keeping the edited $(CONFDIR)/config.yaml"; fi
	@if [ -f $(DESTDIR)$(CONFDIR)/mqtt-password ] && [ ! -s $(DESTDIR)$(CONFDIR)/mqtt-password ]; then \
		rm -f $(DESTDIR)$(CONFDIR)/mqtt-password; fi
	@rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true
	@if $(ON_LIVE_SYSTEMD); then systemctl daemon-reload; fi

# systemd-analyze verify must be clean, the security exposure at most 1.5 and as printed in docs/security.md, MemoryMax= set;
# the D-Bus policy well-formed, narrow, and loaded by dbus-daemon.
.PHONY: check-unit
check-unit:
	bash scripts/check-unit.sh

# --- Debian package (docs/install.md) -------------------------------------------------------------
# `make deb`: dist/gattbridge_<version>_<arch>.deb for this machine's architecture (arm64 on a Pi), from the release
# build; the version is GattBridgeVersion.swift's (scripts/deb/version.sh). `make test-deb`: lintian, then an install
# in a fresh debootstrapped Debian 12 (root, through sudo when needed; a few minutes the first time, ~1 min after).
# DEB_BIN is the binary packaged and DEB_BIN_TARGET the target that builds it.
DEB_BIN_TARGET ?= release
ifeq ($(CROSS),)
DEB_BIN        ?= $(RELEASE_BIN)
else
DEB_BIN        ?= .build-arm64/release/gattbridge
endif
DEB_FILE        = dist/gattbridge_$(shell bash scripts/deb/version.sh)_$(ARCH).deb
DEB_EXTRACT    := .build-deb/extract

deb: $(DEB_BIN_TARGET)
	DEB_ARCH=$(ARCH) bash scripts/deb/build.sh $(DEB_BIN) >/dev/null

# The Raspberry Pi package checked on this amd64 machine (scripts/arm64/test.sh): built by `make deb ARCH=arm64`,
# lintian, Depends: resolved against Debian 12 arm64's archive, then the arm64 binary run under qemu-aarch64-static
# with a Debian 12 arm64 root of runtime libraries only, through integration scenarios on the simulated bench.
.PHONY: test-arm64
test-arm64: setup
	$(MAKE) deb ARCH=arm64
	bash scripts/arm64/test.sh

test-deb: deb
	bash scripts/deb/test.sh

# --- performance, soak, fuzzing (docs/performance.md) -------------------------------------------------------------
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

# The floor relay gattbridge is measured against (bench/floor/relay.c; docs/performance.md).
$(FLOOR_BIN): bench/floor/relay.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -o $@ $< $$(pkg-config --cflags --libs dbus-1 libmosquitto)

# Table on stdout, JSON in .bench/latest.json. BENCH_ARGS=--quick for a short smoke run of the benchmark itself;
# BENCH_ARGS=--no-floor leaves out the floor relay.
bench: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) FLOOR_RELAY_BIN=$(CURDIR)/$(FLOOR_BIN) \
		$(PYTHON) scripts/bench/run_bench.py $(BENCH_ARGS)
	$(MAKE) bench-fleet
	$(MAKE) bench-adverts
	$(MAKE) bench-web
	$(MAKE) bench-proxy

# What the web page costs (docs/performance.md#the-web-page): idle memory and CPU with the page off and on, then one
# headless Chromium on Devices while three devices publish at 1 Hz (~2 min; needs Debian's chromium and Playwright,
# which `make test-web` installs). WEB_ARGS="--before OLD_BINARY" adds a build from before the page.
.PHONY: bench-web
WEB_ARGS ?=
bench-web: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/bench/web_cost.py $(WEB_ARGS)

# What the Home Assistant Bluetooth proxy costs (docs/performance.md#home-assistant-bluetooth-proxy), beside a peer,
# denvera/bt-proxy (Python, bleak): idle memory and CPU with the proxy off and on, then one aioesphomeapi client
# subscribed to raw advertisements with 0 and 50 BTHome broadcasters at 1 Hz (~9 min; in .venv-proxy). The peer comes
# from the mirror `fetch github:denvera/bt-proxy` makes, or PROXY_ARGS="--peer DIR", and is skipped, saying so,
# without it. PROXY_ARGS="--before OLD_BINARY --broadcasters 50 --seconds 60 --no-peer". JSON in
# .bench/proxy-latest.json.
.PHONY: bench-proxy
PROXY_ARGS ?=
bench-proxy: setup bench-build
	bash scripts/proxy/setup.sh
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) .venv-proxy/bin/python scripts/bench/proxy_cost.py $(PROXY_ARGS)

# The fleet at scale (docs/fleet.md): 3 bridges x 30 simulated peripherals on one BlueZoo and broker,
# every device owned once, then the time from an owner's SIGKILL to its devices online elsewhere (~15 s; part of
# make test, exit 1 when a check fails). FLEET_ARGS=…
# (--devices N --bridges N --seed N). JSON in .bench/fleet-latest.json.
.PHONY: bench-fleet
bench-fleet: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/bench/fleet_scale.py $(FLEET_ARGS)

# What passive broadcasters cost the daemon (docs/performance.md#passive-broadcasts): three connected devices idle,
# then 50, 100, … BTHome broadcasters at 1 Hz on BlueZoo (scripts/bench/adverts_bench.py); a table of the daemon's
# CPU, RSS (and anonymous memory) and broadcasts/s per step, once the step's broadcasters are online and again 70 s
# later, settled (~15 min). ADVERTS_ARGS="--steps 50,100 --saved 50 --seconds 20 --quiet 70". JSON in
# .bench/adverts-latest.json.
.PHONY: bench-adverts
ADVERTS_ARGS ?=
bench-adverts: setup bench-build
	GATTBRIDGE_BIN=$(CURDIR)/$(BENCH_BIN) $(PYTHON) scripts/bench/adverts_bench.py $(ADVERTS_ARGS)

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
	$(MAKE) profile-decoded

# A decoded value's budget (issue 45): callgrind's instructions per heart-rate value, decode + publish (and whether that
# is within the budget of 5,000) and in all, on the signal path at QoS 0 (about 3 minutes: valgrind starts the daemon
# slowly). PROFILE_DECODED_ARGS=--qos 1 …
PROFILE_DECODED_ARGS ?=
.PHONY: profile-decoded
profile-decoded: setup profile-build
	GATTBRIDGE_BIN=$(CURDIR)/$(PROFILE_BUILD)/release/gattbridge FLOOR_RELAY_BIN=$(CURDIR)/$(FLOOR_BIN) \
		$(PYTHON) scripts/bench/profile_hot_path.py --path hr --tool callgrind --rate 100 --count 2000 \
		--subjects gattbridge $(PROFILE_DECODED_ARGS)

# The idle daemon's memory in a minute (`make bench` takes eight): RSS/PSS/anonymous/file and every mapping's share,
# three devices online (scripts/bench/memory.py; MEMORY_ARGS=--burst 5000 measures again after traffic,
# --memory-limit 12 under a memory cgroup limited to 12 MiB).
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
