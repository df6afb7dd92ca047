# Skein — build and test.
GO ?= go
NPM ?= npm
# npm packages the tests use (real MCP servers; the MCP conformance suite
# and the Node 24 it runs on), pinned by their lock files.
# web/ holds the run viewer's sources and axe-core, which its browser tests
# inject.
NPM_DIRS := $(dir $(wildcard internal/*/testdata/package-lock.json)) internal/cli/testdata/conformance/ web/

# The linter, pinned: go run fetches this version through the module
# proxy once and caches it; it is not a dependency in go.mod.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Packages whose tests run under the race detector: every internal package
# (the engine, the committer, the runner, stores, MCP sessions, the CLI's
# MCP server and signal handling all start goroutines) but internal/web,
# whose browser tests drive Chromium through pages of a server whose
# packages' own tests run under the detector: they run without it, after
# the race run, so that their pages do not share the cores with it. make
# test runs RACE_PKGS so, once, and the other packages without it.
RACE_PKGS ?= $(shell $(GO) list ./internal/... | grep -v '/internal/web$$')

# How long one package's tests may take (go test's default is 10m). A
# package whose test builds Skein from source (the container image's static
# binary, without the build cache's race or cgo objects) needs more on a
# fresh, loaded machine.
TEST_TIMEOUT ?= 20m

# Fuzzing: an input that finds new coverage is minimised for at most
# FUZZMINIMIZE (Go's default, 60 s, took most of a 30 s run at 0 execs/s).
# Raise it to minimise a failing input: make fuzz FUZZMINIMIZE=60s.
FUZZMINIMIZE ?= 1s
FUZZ = $(GO) test -run='^$$' -fuzzminimizetime=$(FUZZMINIMIZE)

.PHONY: build install test race deps ci lint fuzz bench bench-go man web image

# skein is built static (CGO_ENABLED=0): the SQLite driver, the DNS
# resolver and user lookup are pure Go, and a process starts without the
# dynamic loader and libc, 3-5 ms sooner (BENCHMARKS.md).

# A release build: static, no file system paths in the binary (-trimpath),
# no symbol table or DWARF (-s -w); panics still print their stack traces.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o skein ./cmd/skein

# skein, static, installed where go install puts binaries: $(go env GOBIN),
# or $(go env GOPATH)/bin when GOBIN is empty (~/go/bin by default).
install:
	CGO_ENABLED=0 $(GO) install ./cmd/skein

# The container image, without a container daemon: a static skein for
# Linux (CGO_ENABLED=0; the SQLite driver is pure Go) on an empty base, run
# as user 65532, skein serve by default, written as an OCI image layout in
# skein-image.tar (podman load -i skein-image.tar, or skopeo copy
# oci-archive:skein-image.tar docker://REGISTRY/skein:TAG). docs/deploy.md.
# IMAGE_ARCH picks the architecture; IMAGE_CA_CERTS the certificate
# authorities nodes trust for HTTPS (none when the file is missing).
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_VERSION ?= dev
IMAGE_CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w -X github.com/skeinhq/skein/internal/cli.Version=$(IMAGE_VERSION)" -o tmp/image/skein ./cmd/skein
	$(GO) run ./scripts/image -binary tmp/image/skein -arch $(IMAGE_ARCH) -version $(IMAGE_VERSION) \
		$$([ -f "$(IMAGE_CA_CERTS)" ] && echo -ca-certs "$(IMAGE_CA_CERTS)") -o skein-image.tar

# Man pages, one per command, generated from the commands' definitions.
man:
	$(GO) run ./cmd/skein-man man

# The web viewer's assets (internal/web/assets, committed and embedded):
# bundled by esbuild from web/src, pinned by web/package-lock.json.
web:
	$(NPM) ci --prefix web --no-audit --no-fund --loglevel=error
	node web/build.mjs

# Everything the tests need that Go does not fetch itself: the npm
# packages, and Chromium for the web viewer's browser tests (Debian's
# package, installed when missing and we are root; without it the browser
# tests fail under CI=true and are skipped otherwise).
deps:
	@for d in $(NPM_DIRS); do echo "npm ci --prefix $$d"; $(NPM) ci --prefix $$d --no-audit --no-fund --loglevel=error || exit 1; done
	@if ! command -v chromium >/dev/null && [ -z "$$SKEIN_CHROMIUM" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "apt-get install -y chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || exit 1; \
	fi

# Everything but the race run builds static, as make install does (and
# as the tests that build the skein binary do): the race detector needs
# cgo, and a third configuration, the default one with cgo, would compile
# every package once more on a machine with an empty build cache (144 s
# for ./cmd/skein's on the 2-core machine of BENCHMARKS.md).
STATIC := CGO_ENABLED=0

# The one command that runs every test on a fresh machine: RACE_PKGS under
# the race detector, the other packages (the binary's end-to-end tests,
# the public packages) without it.
test: deps
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(RACE_PKGS)
	$(STATIC) $(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/internal/') ./internal/web

# Only the tests of RACE_PKGS under the race detector.
race: deps
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(STATIC) $(GO) vet ./...
	$(STATIC) $(GO) run $(STATICCHECK) ./...

# Short fuzz runs of the parsers and the scheduler. Each runs a number of
# inputs (about 5–20 s each on a quiet machine), not a duration: Go 1.26's fuzz
# coordinator can fail a run with "context deadline exceeded", and no
# failing input, when a -fuzztime duration ends while a loaded machine
# keeps a worker from answering (go.dev/issue/75804, fixed in Go 1.27).
fuzz:
	$(FUZZ) -fuzz=FuzzDecode -fuzztime=10000x ./workflow
	$(FUZZ) -fuzz=FuzzYAMLDifferential -fuzztime=8000x ./workflow
	$(FUZZ) -fuzz=FuzzApply -fuzztime=5000x ./workflow/edit
	$(FUZZ) -fuzz=FuzzParseTemplate -fuzztime=60000x ./expr
	$(FUZZ) -fuzz=FuzzReferences -fuzztime=60000x ./expr
	$(FUZZ) -fuzz=FuzzScheduler -fuzztime=2500x ./internal/engine
	$(FUZZ) -fuzz=FuzzContains -fuzztime=40000x ./internal/redact
	$(FUZZ) -fuzz=FuzzLoad -fuzztime=2000x ./internal/flowtest
	$(FUZZ) -fuzz=FuzzRead -fuzztime=7000x ./internal/cassette
	$(FUZZ) -fuzz=FuzzReadLock -fuzztime=2500x ./internal/mcp
	$(FUZZ) -fuzz=FuzzWebhookBody -fuzztime=15000x ./internal/reqbody
	$(FUZZ) -fuzz=FuzzRunInputs -fuzztime=10000x ./internal/reqbody
	$(FUZZ) -fuzz=FuzzValidate -fuzztime=30000x ./internal/jsonvalid
	$(FUZZ) -fuzz=FuzzIndent -fuzztime=20000x ./internal/plainjson
	$(FUZZ) -fuzz=FuzzPlainObject -fuzztime=30000x ./internal/store

# The CLI's figures (scripts/bench-cli.sh: chain, foreach, loop, cold
# run), skein run as a process on the project's disk, this tree against
# BENCH_BASE (the previous commit by default), interleaved run by run,
# medians of BENCH_ROUNDS: each figure with its ratio now / base.
BENCH_BASE ?= HEAD~1
BENCH_ROUNDS ?= 5
bench:
	rm -rf tmp/bench-base && mkdir -p tmp/bench-base/src
	git archive $(BENCH_BASE) | tar -x -C tmp/bench-base/src
	cd tmp/bench-base/src && CGO_ENABLED=0 $(GO) build -o ../skein ./cmd/skein
	BASE=tmp/bench-base/skein scripts/bench-cli.sh $(BENCH_ROUNDS)

# The Go benchmarks of decoding, the scheduler and durable runs.
bench-go:
	$(GO) test -run='^$$' -bench=. -benchtime=10x ./workflow ./internal/engine ./internal/durable

ci: lint fuzz test race
