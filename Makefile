# Skein — build and test.
GO ?= go
NPM ?= npm
# npm packages the tests use (real MCP servers; the MCP conformance suite
# and the Node 24 it runs on), pinned by their lock files.
NPM_DIRS := $(dir $(wildcard internal/*/testdata/package-lock.json)) internal/cli/testdata/conformance/

.PHONY: build test deps ci lint fuzz bench man

build:
	$(GO) build -o skein ./cmd/skein

# Man pages, one per command, generated from the commands' definitions.
man:
	$(GO) run ./cmd/skein man man

# Everything the tests need that Go does not fetch itself.
deps:
	@for d in $(NPM_DIRS); do echo "npm ci --prefix $$d"; $(NPM) ci --prefix $$d --no-audit --no-fund --loglevel=error || exit 1; done

# The one command that runs every test on a fresh machine.
test: deps
	$(GO) test ./...

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Short fuzz runs of the parsers and the scheduler.
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=30s ./workflow
	$(GO) test -run='^$$' -fuzz=FuzzYAMLDifferential -fuzztime=20s ./workflow
	$(GO) test -run='^$$' -fuzz=FuzzParseTemplate -fuzztime=15s ./expr
	$(GO) test -run='^$$' -fuzz=FuzzReferences -fuzztime=15s ./expr
	$(GO) test -run='^$$' -fuzz=FuzzScheduler -fuzztime=30s ./internal/engine

bench:
	$(GO) test -run='^$$' -bench=. -benchtime=10x ./workflow ./internal/engine ./internal/durable

ci: lint fuzz test
