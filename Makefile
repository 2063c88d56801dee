# One command runs the server, one runs the tests; both install what they need first.
#   make run     build and start the server on config.example.json (SQLite in ./data)
#   make check   the fast tier, under a minute from a warm build: the XCTest cases that stay in process (no
#                PostgreSQL, no strict mocks, no child process; CHECK_SKIP names the others), the Swift Testing
#                store contract suite on SQLite and in memory, and the strict mocks' own rules (pytest Tests/Support)
#   make test    everything, what CI runs: Swift tests (XCTest, in concurrent groups), the end-to-end SDK tests and
#                the console in Chromium (pytest, PYTEST_WORKERS workers), the Swift client (Clients/PushClient)
#                against the release binary, and the Debian package checks; the tiers run side by side
#                (TEST_JOBS at once), and each prints its wall and CPU time (summary and total at the end)
#   make tsan    the in-process tier under ThreadSanitizer (CI runs it after make test; TSAN_ALL=1 for all)
#   make format  swift format on the tree with .swift-format; make format-check fails when it would change a file
#                or when Sources declares a `public` outside scripts/public-api.txt (make access-check)
#   make test-postgresql  only what runs on PostgreSQL (contract suite, PostgreSQL tests, end-to-end core)
#   make console-demo  the web console against local strict APNs, FCM and Web Push stand-ins (no keys needed)
#   make deb     dist/push-server_<version>_amd64.deb (see docs/OPERATIONS.md)
#   make image   dist/push-server-image, the OCI image from Debian packages (docs/OPERATIONS.md, "Container image")
#   make test-image  builds the image and runs its entrypoint unpacked, in namespaces of its own (root; ~3 minutes)
#   make bench   benchmarks; numbers are recorded in docs/BENCHMARKS.md
#   make fuzz    each libFuzzer target in fuzz/ for FUZZ_SECONDS (default 60), one after the other (docs/SECURITY.md)
SHELL := /bin/bash
CONFIG ?= config.example.json
SWIFT ?= swift
VENV := .venv
PYTHON := $(VENV)/bin/python3
# The Python the Swift tests start (strict mocks, key and certificate helpers): the venv's, with h2 and cryptography.
export PUSH_TEST_PYTHON := $(abspath $(PYTHON))

# Debian packages: C libraries we link, plus the local peers tests and benchmarks talk to.
APT_BUILD := libcurl4-openssl-dev libssl-dev libsqlite3-dev libpq-dev pkg-config
# chromium + chromium-driver (one Debian source package, so always matching versions) drive the console tests;
# fonts-dejavu-core because Chromium renders no text at all without a font.
APT_TEST := openssl python3-venv chromium chromium-driver fonts-dejavu-core
# PostgreSQL 15 for the PostgreSQL backend's tests: each run starts a throwaway cluster in a temporary directory
# (Sources/TestSupport/PostgreSQLCluster.swift, Tests/Support/postgresql_cluster.py); the Debian service stays unused.
APT_TEST += postgresql
# promtool (Debian's prometheus package; the service it ships stays unused) checks the Grafana dashboard's queries and a
# live /metrics scrape (Tests/sdk/test_grafana_dashboard.py).
APT_TEST += prometheus
# Building and checking the .deb: dpkg-deb and dpkg-shlibdeps, lintian, strip, systemd-analyze (and the syscall sets
# of the unit's filter), libseccomp2 (the unit's seccomp filters in Tests/deb/unit_sandbox.py), man (the man page).
APT_DEB := dpkg-dev lintian binutils systemd libseccomp2 man-db
# The OCI image: mmdebstrap makes the Debian root (packages from deb.debian.org), umoci assembles the image.
APT_IMAGE := mmdebstrap umoci
APT_BENCH := wrk nginx-light libnginx-mod-http-echo nghttp2-client nghttp2-server sqlite3 linux-perf golang-go golang-golang-x-net-dev \
	golang-github-golang-jwt-jwt-dev

.PHONY: all build release release-binary run check check-swift check-rules test test-build test-swift test-e2e test-sdk test-timing \
	test-support test-sdk-sqlite test-lint \
	test-sdk-postgresql test-postgresql test-console test-clients test-deb deb image test-image console-demo bench \
	fuzz tsan format format-check access-check deps deps-build deps-test deps-deb deps-image deps-bench venv clean

# The release binary as shipped (docs/OPERATIONS.md): the Swift runtime and Foundation linked in, so it needs only
# Debian's libcurl, OpenSSL and SQLite; no $ORIGIN run path; full RELRO; and the version, git commit and build date
# linked in from an object deploy/build-info.sh writes (a plain `swift build` reports them as "unknown").
# The version (`push-server version`, /health, the package's): set at build time, `make deb VERSION=0.2.1~rc1`; by
# default the newest entry of deploy/deb/changelog, which holds the release notes.
VERSION ?= $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' deploy/deb/changelog)
BIN := .build/release/push-server
# What the end-to-end targets need first; make test builds it once up front and empties this for its lanes.
BINARY_DEP ?= release-binary
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

deps-image:
	$(call apt_install,$(APT_IMAGE))

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

# The test build CI runs treats warnings as errors. The same flags for every debug build made here (make check,
# make test, make test-postgresql, make tsan adds its own), so switching between them recompiles nothing; a plain
# `swift build` without them recompiles everything once (SwiftPM keys its build on the flags).
SWIFT_TEST_FLAGS := -Xswiftc -warnings-as-errors
SWIFT_TEST_BUILD = $(SWIFT) build --build-tests $(SWIFT_TEST_FLAGS)
XCTEST_BUNDLE := $(abspath .build/debug/PushServerPackageTests.xctest)
# The test bundle in concurrent processes, each a group of XCTest classes, plus one process for the Swift Testing
# tests (the store contract suite over its backends; Tests/run_xctest.py says why not `swift test --parallel`).
# Three on two cores: many tests wait on timers, sockets and child processes.
XCTEST_WORKERS ?= 3
RUN_XCTEST = python3 Tests/run_xctest.py $(XCTEST_BUNDLE) --workers $(XCTEST_WORKERS)
# pytest-xdist workers for the end-to-end suites; --dist loadfile keeps each test file (its module-scoped servers,
# mocks and environment) in one worker, and --no-loadscope-reorder hands the files out in collection order, which
# Tests/sdk/conftest.py sorts longest first. PYTEST_WORKERS=0 runs them in one process. Tests/sdk, the longest tier
# of make test, gets SDK_WORKERS (3 on two cores: its tests mostly wait on mock delays, leases, pacing and restarts,
# see docs/CONTRIBUTING.md); the others finish beside it on two.
PYTEST_WORKERS ?= 2
SDK_WORKERS ?= $(if $(filter 0,$(PYTEST_WORKERS)),0,3)
pytest_on = $(VENV)/bin/pytest -q $(if $(filter 0,$(1)),,-n $(1) --dist loadfile --no-loadscope-reorder)
PYTEST = $(call pytest_on,$(PYTEST_WORKERS))
# Each tier prints its wall time, and appends it to TIER_TIMES for make test's summary.
TIER_TIMES := $(abspath .build/tier-times)
TIER = TIER_TIMES=$(TIER_TIMES) bash Tests/tier.sh

# The in-process tier: XCTest classes that start a child process (PostgreSQL clusters, the Python stand-ins,
# openssl or python for keys and certificates) are left to make test. TestSupport refuses to start a child under
# PUSH_TEST_TIER=check, so a class missing here fails make check with the fix in its message. The contract suite's
# PostgreSQL cases are not names: PUSH_TEST_TIER=check leaves that backend out (ContractBackend.selected).
CHECK_SKIP := ^PostgreSQLStoreTests[.]|OnPostgreSQL/|[.]PostgreSQLServerTests/
CHECK_SKIP := $(CHECK_SKIP)|^APNsClientTests[.](APNs(BroadcastClient|CertificateAuth|ClientConnection|ClientLogging|ClientResponse|ConnectionFault|Credentials|Environment|ProviderTokenFloor|SharedProviderToken|TokenStoreWait)|MockAPNsLaunch|ProviderTokenManager|ProviderTokenState)Tests/
CHECK_SKIP := $(CHECK_SKIP)|^FCMClientTests[.](AccessTokenRequest|AccessTokenResponse|FCMSender|MockFCMRules|ServiceAccount)Tests/
CHECK_SKIP := $(CHECK_SKIP)|^JWTSignerTests[.]|^TLSIdentityTests[.]|^WebPushTests[.]WebPush(Request|RoundTrip|Sender)Tests/
CHECK_SKIP := $(CHECK_SKIP)|^WebPushTests[.](RFC8291VectorTests/testReferenceImplementation|VAPIDTests/testReferenceVerifier)
CHECK_SKIP := $(CHECK_SKIP)|^HTTPServerTests[.](HTTPServerBehaviour|TLS)Tests/
CHECK_SKIP := $(CHECK_SKIP)|^PushServerTests[.](Console|PlatformConfig|ServerConfigCertificate|ServerConfig|SystemdNotifier)Tests/

check: deps-test
	@rm -f $(TIER_TIMES); \
	$(MAKE) --no-print-directory -k -j2 --output-sync=target check-swift check-rules; status=$$?; \
	echo "== make check, wall time per tier:"; cat $(TIER_TIMES); exit $$status

check-swift:
	$(SWIFT_TEST_BUILD)
	@PUSH_TEST_TIER=check $(TIER) "swift tests (in process)" $(RUN_XCTEST) --skip '$(CHECK_SKIP)'

# The strict mocks' own rules (Tests/Support): the Python stand-ins checked on their own, no push-server involved.
# Then every pytest suite collected, not run (3 s): a test file that imports a helper another file no longer has
# fails here, not only in make test's end-to-end tiers.
check-rules:
	@$(TIER) "swift format lint" $(MAKE) --no-print-directory -s format-check
	@$(TIER) "pytest Tests/Support" $(PYTEST) Tests/Support
	@$(TIER) "pytest collect (every suite)" bash -o pipefail -c '$(VENV)/bin/pytest --collect-only -q Tests | tail -n 25'

# Everything. The two builds first (from a warm tree they cost seconds), then every tier side by side, TEST_JOBS at
# once, the longest first (Tests/sdk, XCTest and PostgreSQL; the shorter ones follow in the first free slot): most
# of their time is waiting (timers, mock delays, leases, child processes), so on two cores they overlap well; each
# tier's line shows its CPU time beside its wall time. Three, not more: the tiers after the first three fit beside
# Tests/sdk anyway, and a fourth at once only adds CPU contention to tests with time bounds. Then the tests marked
# `timing`, alone.
# -k: a failing tier does not stop the others, so one run reports every failure; the summary comes either way.
TEST_JOBS ?= 3
TEST_TIERS := test-sdk-sqlite test-swift test-sdk-postgresql test-console test-support test-deb test-clients test-lint
test: deps-test
	@rm -f $(TIER_TIMES); start=$$(date +%s); \
	$(TIER) "build (tests, release)" $(MAKE) --no-print-directory test-build || exit $$?; \
	$(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target BINARY_DEP= $(TEST_TIERS); status=$$?; \
	$(MAKE) --no-print-directory BINARY_DEP= test-timing || status=$$?; \
	echo "== make test, wall time per tier:"; cat $(TIER_TIMES); \
	echo "  total (make test)                  $$(( $$(date +%s) - start )) s"; exit $$status

test-build: release-binary
	$(SWIFT_TEST_BUILD)

test-e2e: test-sdk test-sdk-postgresql test-console test-clients test-deb

test-lint:
	@$(TIER) "swift format lint" $(MAKE) --no-print-directory -s format-check

test-swift:
	$(SWIFT_TEST_BUILD)
	@$(TIER) "swift tests (all)" $(RUN_XCTEST)

# The strict mock's own rules (Tests/Support) and the release binary end to end (Tests/sdk), two tiers; the tests
# marked `timing` (rates compared within one test) run after the parallel tiers, alone (test-timing).
test-sdk: test-support test-sdk-sqlite

test-support:
	@$(TIER) "pytest Tests/Support" $(PYTEST) Tests/Support

test-sdk-sqlite: $(BINARY_DEP)
	@PUSH_SERVER_BIN=$(abspath $(BIN)) $(TIER) "pytest Tests/sdk" $(call pytest_on,$(SDK_WORKERS)) -m "not timing" Tests/sdk

# On both stores: the PostgreSQL tier runs its files' timing tests here too (test_quotas.py's shared budget measured
# 23 in one second against a bound of 22 beside the parallel tiers in one CI run).
test-timing: $(BINARY_DEP)
	@PUSH_SERVER_BIN=$(abspath $(BIN)) $(TIER) "pytest Tests/sdk (timing, alone)" $(VENV)/bin/pytest -q -m timing Tests/sdk
	@PUSH_SERVER_BIN=$(abspath $(BIN)) PUSH_TEST_STORE=postgresql $(TIER) "pytest on PostgreSQL (timing, alone)" \
		$(VENV)/bin/pytest -q -m timing $(SDK_POSTGRESQL)

# The core end-to-end suites (publish, kill -9 durability, the Beams Python SDK) with the server on PostgreSQL: each
# server gets a database of its own in a throwaway PostgreSQL 15 cluster (Tests/Support/postgresql_cluster.py).
# (test_postgresql_nodes.py and test_postgresql_shards.py, two nodes on one database, test_postgresql_restart.py,
# the database restarted mid fan-out, test_postgresql_partition.py, one node cut off from the database mid fan-out,
# and test_hms_nodes.py, one HMS OAuth token for two nodes and a restart, run in test-sdk already;
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
# The invalidation log written in the results' transaction (migration 8): feed and device.invalidated webhook.
SDK_POSTGRESQL += Tests/sdk/test_device_invalidations.py
# HMS devices under the widened platform CHECK (migration 9), registration to delivery.
SDK_POSTGRESQL += Tests/sdk/test_hms.py
# The Beams bridge's outbox (migration 10): forwards queued with the publish, claimed, retried, kept across kill -9.
SDK_POSTGRESQL += Tests/sdk/test_beams_bridge.py
# Device export and import (docs/DATA-FORMAT.md): the round trip, re-import, dry run and refusals on the shared store.
SDK_POSTGRESQL += Tests/sdk/test_device_transfer.py
# Imports from Parse, OneSignal and SNS exports (docs/OPERATIONS.md): dry run, report, publish, re-import.
SDK_POSTGRESQL += Tests/sdk/test_provider_import.py
# Quotas per instance (migration 11): the device quota and the daily publish count in the publish's transaction.
SDK_POSTGRESQL += Tests/sdk/test_quotas.py
# Scoped keys and Beams-secret rolls (the api_keys table): scopes, expiry, revocation, the SDK across a roll.
SDK_POSTGRESQL += Tests/sdk/test_api_keys.py
# The audit log (migration 15): entries written in the change's transaction, read back paged.
SDK_POSTGRESQL += Tests/sdk/test_audit_log.py
# Run-time instances (migration 16): stored definitions, the set's version and NOTIFY, SIGHUP on the shared store.
SDK_POSTGRESQL += Tests/sdk/test_runtime_instances.py
test-sdk-postgresql: $(BINARY_DEP)
	@PUSH_SERVER_BIN=$(abspath $(BIN)) PUSH_TEST_STORE=postgresql $(TIER) "pytest on PostgreSQL" $(PYTEST) -m "not timing" \
		$(SDK_POSTGRESQL)

# Everything that runs on PostgreSQL: the store contract suite on that backend alone (Swift Testing,
# PUSH_TEST_BACKENDS), PostgreSQLStoreTests (XCTest), the server's outage test, then the end-to-end core above.
test-postgresql: deps-test
	$(SWIFT_TEST_BUILD)
	PUSH_TEST_BACKENDS=postgresql $(RUN_XCTEST) --only 'Contract/|OnPostgreSQL|PostgreSQLStoreTests|PostgreSQLServerTests'
	@$(MAKE) --no-print-directory test-sdk-postgresql
	PUSH_SERVER_BIN=$(abspath $(BIN)) PUSH_TEST_STORE=postgresql $(VENV)/bin/pytest -q -m timing $(SDK_POSTGRESQL)
	PUSH_SERVER_BIN=$(abspath $(BIN)) $(PYTEST) Tests/sdk/test_postgresql_nodes.py Tests/sdk/test_postgresql_shards.py \
		Tests/sdk/test_postgresql_restart.py Tests/sdk/test_postgresql_partition.py Tests/sdk/test_hms_nodes.py

# The console in a real browser: Debian's headless Chromium driven by Selenium through /usr/bin/chromedriver.
# Screenshots land in .build/console-screenshots (docs/console keeps one of each).
test-console: $(BINARY_DEP)
	@PUSH_SERVER_BIN=$(abspath $(BIN)) $(TIER) "pytest Tests/console" $(VENV)/bin/pytest -q Tests/console

# The Swift client library, its own package, against the release binary.
test-clients: $(BINARY_DEP)
	@PUSH_SERVER_BIN=$(abspath $(BIN)) $(TIER) "Clients/PushClient" $(SWIFT) test --package-path Clients/PushClient

# The console against the local strict APNs, FCM and Web Push stand-ins: every answer can be seen without keys.
console-demo: deps-test release-binary
	$(PYTHON) console/demo.py


# The package: built with Debian's tools from the release binary; its version is the binary's.
deb: deps-deb $(BINARY_DEP)
	bash deploy/deb/build.sh $(BIN) $(DIST)

# The package as an administrator gets it: contents and modes, control fields, lintian, its binary's libraries, an
# unpacked install that checks the shipped config and serves /health, systemd-analyze on the shipped unit, the
# unit's ExecStartPre and ExecStart under the unit's own sandbox (user, umask, credentials, seccomp), and dpkg
# installs and upgrades into a throwaway root without a terminal (the root-only parts are skipped without root).
test-deb: deb
	@PUSH_SERVER_DEB=$(abspath $(DEB)) $(TIER) "pytest Tests/deb" $(VENV)/bin/pytest -q Tests/deb

# The OCI image from Debian packages only: a bookworm root of Essential packages and the libraries the binary links, plus the
# stripped binary, as one layer (deploy/image/build.sh). Fetches packages from deb.debian.org (DEBIAN_MIRROR).
image: deps-deb deps-image $(BINARY_DEP)
	bash deploy/image/build.sh $(BIN) $(DIST)

# The image unpacked with umoci and its entrypoint run as the image's user in a mount and PID namespace of its
# own, with the volumes bind-mounted: /health, the health check command, a registration, and two nodes on one
# PostgreSQL database as ops/compose.yaml runs them (Tests/image; root). Not in
# make test: the build fetches from the network and takes two to three minutes; CI runs it after make test.
test-image: deps-test image
	@PUSH_SERVER_IMAGE=$(abspath $(DIST))/push-server-image $(TIER) "pytest Tests/image" $(VENV)/bin/pytest -q Tests/image

# ThreadSanitizer over the in-process tier, XCTest and Swift Testing (what CI runs after make test; TSAN_ALL=1 for
# all the Swift tests), in its own build directory, .build-tsan, so the normal build stays warm. Not inside make
# test: the instrumented build is a second full compile (about 4 minutes here); the runs themselves are short (docs/CONTRIBUTING.md, "Checks in CI").
TSAN_BUNDLE := $(abspath .build-tsan/debug/PushServerPackageTests.xctest)
tsan: deps-test
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	@TSAN_OPTIONS=halt_on_error=0 $(if $(TSAN_ALL),,PUSH_TEST_TIER=check) $(TIER) "swift tests under TSan" \
		python3 Tests/run_xctest.py $(TSAN_BUNDLE) --workers 2 $(if $(TSAN_ALL),,--skip '$(CHECK_SKIP)')

# The one formatter configuration (.swift-format). The tree is not formatted yet: the one-off reformat is its own
# commit; until then `make format` is for the files you touch (FILES=...), default the whole tree.
FILES ?= Sources Plugins Tests Package.swift
format:
	$(SWIFT) format format --parallel --in-place --recursive --configuration .swift-format $(FILES)

# Fails when make format would change a file or a lint rule of .swift-format is broken (swift format lint --strict),
# or (access-check first) when Sources declares a `public` not listed in scripts/public-api.txt.
# make check and make test (so CI) run it: run make format before committing.
format-check: access-check
	$(SWIFT) format lint --strict --parallel --recursive --configuration .swift-format $(FILES)

# `package` is the access level inside the package; `public` only for what fuzz/ calls (scripts/public-api.txt).
# `python3 scripts/access-level.py --write` demotes every other `public`.
access-check:
	@python3 scripts/access-level.py --check

bench: deps-bench
	bash bench/run-all.sh

# Not part of `make test`: a fuzz run finds what it finds in its time, and its sanitizer build is separate (fuzz/).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := JSONFuzz HTTPParserFuzz DERFuzz PublishFuzz DeviceBodyFuzz
fuzz: deps-build
	@for t in $(FUZZ_TARGETS); do fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; done

clean:
	rm -rf .build .build-* $(VENV) $(DIST) Clients/PushClient/.build fuzz/.build fuzz/corpus fuzz/artifacts
