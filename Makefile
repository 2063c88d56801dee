# One command runs the server, one runs the tests; both install what they need first.
#   make run     build and start the server on config.example.json (SQLite in ./data)
#   make test    Swift tests (XCTest), the end-to-end SDK tests and the console in Chromium (pytest), the Swift
#                client (Clients/PushClient) against the release binary, and the Debian package checks
#   make test-postgresql  only what runs on PostgreSQL (contract suite, PostgreSQL tests, end-to-end core)
#   make console-demo  the web console against local strict APNs, FCM and Web Push stand-ins (no keys needed)
#   make deb     dist/push-server_<version>_amd64.deb (see docs/OPERATIONS.md)
#   make bench   benchmarks; numbers are recorded in docs/BENCHMARKS.md
#   make fuzz    each libFuzzer target in fuzz/ for FUZZ_SECONDS (default 60), one after the other (docs/SECURITY.md)
SHELL := /bin/bash
CONFIG ?= config.example.json
SWIFT ?= swift
VENV := .venv
PYTHON := $(VENV)/bin/python3

# Debian packages: C libraries we link, plus the local peers tests and benchmarks talk to.
APT_BUILD := libcurl4-openssl-dev libssl-dev libsqlite3-dev libpq-dev pkg-config
# chromium + chromium-driver (one Debian source package, so always matching versions) drive the console tests;
# fonts-dejavu-core because Chromium renders no text at all without a font.
APT_TEST := openssl python3-venv chromium chromium-driver fonts-dejavu-core
# PostgreSQL 15 for the PostgreSQL backend's tests: each run starts a throwaway cluster in a temporary directory
# (Sources/TestSupport/PostgreSQLCluster.swift, Tests/Support/postgresql_cluster.py); the Debian service stays unused.
APT_TEST += postgresql
# Building and checking the .deb: dpkg-deb and dpkg-shlibdeps, lintian, strip, systemd-analyze (and the syscall sets
# of the unit's filter), libseccomp2 (the unit's seccomp filters in Tests/deb/unit_sandbox.py), man (the man page).
APT_DEB := dpkg-dev lintian binutils systemd libseccomp2 man-db
APT_BENCH := wrk nginx-light libnginx-mod-http-echo nghttp2-client nghttp2-server sqlite3

.PHONY: all build release release-binary run test test-swift test-sdk test-sdk-postgresql test-postgresql test-console test-clients test-deb deb console \
	console-demo bench fuzz deps deps-build deps-test deps-deb deps-bench venv clean

# The release binary as shipped (docs/OPERATIONS.md): the Swift runtime and Foundation linked in, so it needs only
# Debian's libcurl, OpenSSL and SQLite; no $ORIGIN run path; full RELRO; and the version, git commit and build date
# linked in from an object deploy/build-info.sh writes (a plain `swift build` reports them as "unknown").
# The version (`push-server version`, /health, the package's): set at build time, `make deb VERSION=0.2.1~rc1`; by
# default the newest entry of deploy/deb/changelog, which holds the release notes.
VERSION ?= $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' deploy/deb/changelog)
BIN := .build/release/push-server
BUILD_INFO := .build/build-info/build-info.o
RELEASE_FLAGS := -c release --product push-server --static-swift-stdlib --disable-local-rpath \
	-Xlinker -z -Xlinker now -Xlinker $(abspath $(BUILD_INFO))
DIST := dist
# The package `make deb` writes, named after the binary's version (expanded when a recipe runs, after the build).
DEB = $(DIST)/push-server_$(shell $(BIN) version | sed -n '1s/^push-server //p')_$(shell dpkg --print-architecture).deb

all: build

# Installs only the packages that are missing, so a second run costs nothing and needs no network.
define apt_install
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps-build:
	$(call apt_install,$(APT_BUILD))

deps-test: deps-build deps-deb
	$(call apt_install,$(APT_TEST))
	@$(MAKE) --no-print-directory venv

deps-deb:
	$(call apt_install,$(APT_DEB))

deps-bench: deps-test
	$(call apt_install,$(APT_BENCH))
	@$(VENV)/bin/pip install -q -r requirements-bench.txt

$(PYTHON):
	python3 -m venv $(VENV)

venv: $(PYTHON)
	@cmp -s requirements-test.txt $(VENV)/.installed || { $(VENV)/bin/pip install -q --upgrade pip >/dev/null && $(VENV)/bin/pip install -q -r requirements-test.txt && cp requirements-test.txt $(VENV)/.installed; }

build: deps-build release-binary

# SwiftPM does not see the build-info object change, so the binary is removed to make it link again (~2 s).
release-binary:
	@VERSION='$(VERSION)' bash deploy/build-info.sh $(BUILD_INFO)
	@rm -f $(BIN)
	$(SWIFT) build $(RELEASE_FLAGS)

release: build

run: build
	mkdir -p data
	$(BIN) serve --config $(CONFIG)

test: deps-test test-swift test-sdk test-sdk-postgresql test-console test-clients test-deb

test-swift:
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) build --build-tests
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) test --skip-build

# The strict mock's own rules (Tests/Support), then the release binary end to end (Tests/sdk).
test-sdk: release-binary
	$(VENV)/bin/pytest -q Tests/Support
	PUSH_SERVER_BIN=$(abspath $(BIN)) $(VENV)/bin/pytest -q Tests/sdk

# The core end-to-end suites (publish, kill -9 durability, the Beams Python SDK) with the server on PostgreSQL: each
# server gets a database of its own in a throwaway PostgreSQL 15 cluster (Tests/Support/postgresql_cluster.py).
# (test_postgresql_nodes.py, two nodes on one database, test_postgresql_restart.py, the database restarted mid
# fan-out, and test_postgresql_partition.py, one node cut off from the database mid fan-out, run in test-sdk already;
# test-postgresql adds them.)
SDK_POSTGRESQL := Tests/sdk/test_publish_intake.py Tests/sdk/test_publish_fanout.py Tests/sdk/test_publish_durability.py \
	Tests/sdk/test_beams_python_sdk.py Tests/sdk/test_device_concurrency.py
SDK_POSTGRESQL += Tests/sdk/test_broadcast_channels.py
# Publish slots: paced publishes parked without a slot, and resumed after kill -9, on the shared store.
SDK_POSTGRESQL += Tests/sdk/test_publish_slots.py
# The mixed workload (sharded fan-out, small publishes, registrations at once): one node on SQLite in test-sdk, two
# nodes on one database here.
SDK_POSTGRESQL += Tests/sdk/test_mixed_workload.py
# UnifiedPush devices under the widened platform CHECK (migration 7), registration to delivery.
SDK_POSTGRESQL += Tests/sdk/test_unifiedpush.py
# HMS devices under the widened platform CHECK (migration 8), registration to delivery.
SDK_POSTGRESQL += Tests/sdk/test_hms.py
test-sdk-postgresql: release-binary
	PUSH_SERVER_BIN=$(abspath $(BIN)) PUSH_TEST_STORE=postgresql $(VENV)/bin/pytest -q $(SDK_POSTGRESQL)

# Everything that runs on PostgreSQL: the store contract suite and PostgreSQLStoreTests (XCTest), the server's
# outage test, then the end-to-end core above.
test-postgresql: deps-test
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) build --build-tests
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) test --skip-build --filter 'OnPostgreSQL|PostgreSQLStoreTests|PostgreSQLServerTests'
	@$(MAKE) --no-print-directory test-sdk-postgresql
	PUSH_SERVER_BIN=$(abspath $(BIN)) $(VENV)/bin/pytest -q Tests/sdk/test_postgresql_nodes.py Tests/sdk/test_postgresql_restart.py \
		Tests/sdk/test_postgresql_partition.py

# The console in a real browser: Debian's headless Chromium driven by Selenium through /usr/bin/chromedriver.
# Screenshots land in .build/console-screenshots (docs/console keeps one of each).
test-console: release-binary
	PUSH_SERVER_BIN=$(abspath $(BIN)) $(VENV)/bin/pytest -q Tests/console

# The Swift client library, its own package, against the release binary.
test-clients: release-binary
	PUSH_SERVER_BIN=$(abspath $(BIN)) $(SWIFT) test --package-path Clients/PushClient

# The console against the local strict APNs, FCM and Web Push stand-ins: every answer can be seen without keys.
console-demo: deps-test release-binary
	$(PYTHON) console/demo.py

# Regenerates the embedded copy of console/* (Sources/PushServer/Console/ConsoleAssets.swift).
console:
	python3 console/embed.py

# The package: built with Debian's tools from the release binary; its version is the binary's.
deb: deps-deb release-binary
	bash deploy/deb/build.sh $(BIN) $(DIST)

# The package as an administrator gets it: contents and modes, control fields, lintian, its binary's libraries, an
# unpacked install that checks the shipped config and serves /health, systemd-analyze on the shipped unit, the
# unit's ExecStartPre and ExecStart under the unit's own sandbox (user, umask, credentials, seccomp), and dpkg
# installs and upgrades into a throwaway root without a terminal (the root-only parts are skipped without root).
test-deb: deb
	PUSH_SERVER_DEB=$(abspath $(DEB)) $(VENV)/bin/pytest -q Tests/deb

bench: deps-bench
	bash bench/run-all.sh

# Not part of `make test`: a fuzz run finds what it finds in its time, and its sanitizer build is separate (fuzz/).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := JSONFuzz HTTPParserFuzz DERFuzz PublishFuzz DeviceBodyFuzz
fuzz: deps-build
	@for t in $(FUZZ_TARGETS); do fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; done

clean:
	rm -rf .build .build-* $(VENV) $(DIST) Clients/PushClient/.build fuzz/.build fuzz/corpus fuzz/artifacts
