# One command runs the server, one runs the tests; both install what they need first.
#   make run     build and start the server on config.example.json (SQLite in ./data)
#   make test    Swift tests (XCTest), the end-to-end SDK tests and the console in Chromium (pytest), and the
#                Swift client (Clients/PushClient) against the release binary
#   make console-demo  the web console against a local mock APNs (no Apple key needed)
#   make bench   benchmarks; numbers are recorded in docs/BENCHMARKS.md
SHELL := /bin/bash
CONFIG ?= config.example.json
SWIFT ?= swift
VENV := .venv
PYTHON := $(VENV)/bin/python3

# Debian packages: C libraries we link, plus the local peers tests and benchmarks talk to.
APT_BUILD := libcurl4-openssl-dev libssl-dev libsqlite3-dev pkg-config
# chromium + chromium-driver (one Debian source package, so always matching versions) drive the console tests;
# fonts-dejavu-core because Chromium renders no text at all without a font.
APT_TEST := openssl python3-venv chromium chromium-driver fonts-dejavu-core
APT_BENCH := wrk nginx-light libnginx-mod-http-echo nghttp2-client nghttp2-server sqlite3

.PHONY: all build release run test test-swift test-sdk test-console test-clients console console-demo bench deps deps-build deps-test deps-bench venv clean

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

deps-test: deps-build
	$(call apt_install,$(APT_TEST))
	@$(MAKE) --no-print-directory venv

deps-bench: deps-test
	$(call apt_install,$(APT_BENCH))
	@$(VENV)/bin/pip install -q -r requirements-bench.txt

$(PYTHON):
	python3 -m venv $(VENV)

venv: $(PYTHON)
	@cmp -s requirements-test.txt $(VENV)/.installed || { $(VENV)/bin/pip install -q --upgrade pip >/dev/null && $(VENV)/bin/pip install -q -r requirements-test.txt && cp requirements-test.txt $(VENV)/.installed; }

build: deps-build
	$(SWIFT) build -c release --product push-server

release: build

run: build
	mkdir -p data
	.build/release/push-server serve --config $(CONFIG)

test: deps-test test-swift test-sdk test-console test-clients

test-swift:
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) build --build-tests
	PUSH_TEST_PYTHON=$(abspath $(PYTHON)) $(SWIFT) test --skip-build

# The strict mock's own rules (Tests/Support), then the release binary end to end (Tests/sdk).
test-sdk:
	$(SWIFT) build -c release --product push-server
	$(VENV)/bin/pytest -q Tests/Support
	PUSH_SERVER_BIN=$(abspath .build/release/push-server) $(VENV)/bin/pytest -q Tests/sdk

# The console in a real browser: Debian's headless Chromium driven by Selenium through /usr/bin/chromedriver.
# Screenshots land in .build/console-screenshots (docs/console keeps one of each).
test-console:
	$(SWIFT) build -c release --product push-server
	PUSH_SERVER_BIN=$(abspath .build/release/push-server) $(VENV)/bin/pytest -q Tests/console

# The Swift client library, its own package, against the release binary.
test-clients:
	$(SWIFT) build -c release --product push-server
	PUSH_SERVER_BIN=$(abspath .build/release/push-server) $(SWIFT) test --package-path Clients/PushClient

# The console against the local strict mock APNs: every answer can be seen without an Apple key.
console-demo: deps-test
	$(SWIFT) build -c release --product push-server
	$(PYTHON) console/demo.py

# Regenerates the embedded copy of console/* (Sources/PushServer/Console/ConsoleAssets.swift).
console:
	python3 console/embed.py

bench: deps-bench
	bash bench/run-all.sh

clean:
	rm -rf .build .build-* $(VENV) Clients/PushClient/.build
