# operatorkit's one entry point for people and CI.
#
#   make demo   the example operator against an API server it starts itself
#   make test   everything CI runs: library unit tests, integration tests
#               against a real kube-apiserver, the example operator's tests
#   make bench  the side-by-side benchmark (BENCH_QUICK=1 for a short run)
#
# Every module is built on its own (GOWORK=off): the library never sees the
# k8s.io/kubernetes build that testenv needs, and each module's go.mod is
# what its tests use. Packages that link the in-process kube-apiserver are
# tested with -p 1, so two 3 GB links never overlap.

GO ?= go
LIB := GOWORK=off $(GO)
# Short fuzzing in `make test`; raise it for a real fuzzing session.
FUZZTIME ?= 10s
# Race-detect the integration tests (the Framework's concurrency against a
# real server). RACE= turns it off for a faster local loop.
RACE ?= -race

APISERVER_NOTE = @echo ">> $(1): building packages that link the in-process kube-apiserver and etcd." ; \
	echo "   The first build takes several minutes (about 8 on 2 cores, 3 GB peak); later builds take seconds."

.PHONY: test test-unit test-integration test-example test-fuzz test-bench lint demo bench bench-unit generate

test: lint test-unit test-integration test-example test-fuzz test-bench

## test-unit: vet and race-test every package of the library module.
test-unit:
	$(LIB) vet ./...
	$(LIB) test -race -count=1 ./...

## test-integration: testenv itself, then the library against a real API server.
test-integration:
	$(call APISERVER_NOTE,test-integration)
	cd testenv && $(LIB) vet ./... && $(LIB) test -p 1 -count=1 ./...
	cd integration && $(LIB) vet ./... && $(LIB) test -p 1 $(RACE) -count=1 -timeout 20m ./...

## test-example: the example operator: race-tested units, then e2e and reliability against a real API server.
test-example:
	cd example && $(LIB) vet ./...
	$(MAKE) -C example test-unit GO="$(LIB)"
	$(call APISERVER_NOTE,test-example)
	$(MAKE) -C example test-e2e GO="$(LIB)"

## test-fuzz: run each fuzz target briefly (FUZZTIME each).
test-fuzz:
	$(MAKE) -C example fuzz GO="$(LIB)" FUZZTIME=$(FUZZTIME)

## lint: fail on unformatted Go files anywhere in the repository, then vet the library.
lint:
	@out=$$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(LIB) vet ./...

## demo: build and run the demo (flags: make demo DEMO_FLAGS="--objects 50 --hold").
demo:
	$(call APISERVER_NOTE,demo)
	cd example && $(LIB) build -o ../bin/demo ./cmd/demo
	./bin/demo $(DEMO_FLAGS)

## generate: regenerate the example's deepcopy code and CRD YAML with controller-gen.
generate:
	$(MAKE) -C example generate GO="$(LIB)"

## bench-unit: the library's micro-benchmarks (see docs/benchmarks.md).
bench-unit:
	$(LIB) test -run '^$$' -bench . -benchmem ./...

## bench: the side-by-side benchmark against controller-runtime and plain client-go
## (about 20 minutes; BENCH_QUICK=1 for N=200 and one repetition).
bench:
	$(call APISERVER_NOTE,bench)
	bash bench/bench.sh

## test-bench: the benchmark's unit tests and its quick mode, so that its code never rots.
test-bench:
	cd bench && $(LIB) vet ./... && $(LIB) test -count=1 ./...
	$(call APISERVER_NOTE,test-bench)
	BENCH_QUICK=1 bash bench/bench.sh
