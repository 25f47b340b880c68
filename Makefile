# The README's two commands: `make demo` runs the main job, `make test` the tests.
GO ?= go

.PHONY: test vet bench demo build
test: vet
	$(GO) test -count=1 -timeout 80m ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet ./...

build:
	$(GO) build -o bin/ ./cmd/...
