# operatorkit's one entry point for people and CI.
#
#   make demo   the example operator against an API server it starts itself
#   make test   everything CI runs: library unit tests, integration tests
#               against a real kube-apiserver, the example operator's tests,
#               the getting-started guide's operator;
#               prints each stage's duration and a table of them, with CPU times, at the end
#   make bench  the side-by-side benchmark (BENCH_QUICK=1 for a short run)
#
# Every module is built on its own (GOWORK=off), so each module's go.mod is
# what its tests use. No module links k8s.io/kubernetes: the test API server
# is a program of its own that testenv builds once into the user cache dir
# (stage `apiserver`) and runs as a child process of each test binary.

GO ?= go
LIB := GOWORK=off $(GO)
# -trimpath keeps the checkout's directory out of the build cache's keys of
# the repository's own packages, so that a fresh clone elsewhere (CI) finds
# what an earlier run compiled instead of compiling every package again.
# The compiler writes no DWARF (-gcflags=all=-dwarf=false) and the linker none either (-ldflags=-w):
# nothing in `make test` reads it (panics, race reports and profiles use the symbol table), and
# it cost about 8 % of the CPU of cold builds (docs/ci.md, fifth session).
# testenv's build of the server program takes -trimpath and -gcflags over, so that the
# packages it shares with these builds compile once. To debug a test binary, build it without make.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath -gcflags=all=-dwarf=false -ldflags=-w)
# Fuzzing time per target of `make test-fuzz` (not part of `make test`: its
# first build instruments every dependency, 12 minutes of CPU on a cold
# 2-core machine; `make test` runs each fuzz target's seed corpus as a test).
FUZZTIME ?= 10s
# The stages that mostly compile (apiserver, test-unit, lint, build-tests, and demo's two
# builds) run the go command, and so the compiler and linker, with GOGC=$(BUILD_GOGC): they
# collect garbage less often, for about a fifth less CPU (k8s.io/api: 113 s against 143 s of
# CPU, mean of five pairs on 2 cores) and a few hundred MB more memory per compile (docs/ci.md).
# The stages that run API servers keep the default, so that the servers' memory does not grow.
BUILD_GOGC ?= 400
COMPILE := GOGC=$(BUILD_GOGC) $(LIB)
# Each go test of `make test` runs where `go vet` has vetted the same packages (lint the
# library's, each other stage its module's first, with every analyzer), so go test's own vet
# pass is off: it would compute the vet facts of every dependency once more, for the
# race-instrumented build (about a minute of CPU on a cold machine, docs/ci.md).
NOVET := -vet=off
# Where the benchmark's programs and results go (bench/bench.sh reads it too), as an
# absolute path: build-tests builds the programs from bench/, bench.sh runs from the root.
export BENCH_OUT := $(abspath $(or $(BENCH_OUT),$(CURDIR)/bench/out))
# Race-detect the integration tests (the Framework's concurrency against a
# real server). RACE= turns it off for a faster local loop.
RACE ?= -race

# The stages of `make test`, in order (hack/stages.sh; bg: runs a stage in the
# background until the next wait). The stages that mostly compile run one
# after the other: the unit tests first (race-instrumented: packages of their
# own; a broken library fails in minutes), then the test API server's build,
# then lint (its vet reads packages the server's build compiled) and
# build-tests, which compiles what the example's, the guide's and the
# benchmark's stages will run. Two compiling go commands at once on 2 cores
# took a third more CPU than one after the other, and longer (docs/ci.md,
# fifth session). Then the stages that mostly wait for API servers run side
# by side: the example's, the guide's and the benchmark's smoke run beside the
# integration tests (none compiles any more while the timing-sensitive
# integration tests run; the smoke run, alone at the end, left a core idle
# for about half a minute: docs/ci.md, sixth session).
STAGES := test-unit apiserver lint build-tests bg:test-example bg:test-guide bg:test-bench test-integration wait

.PHONY: test apiserver build-tests test-unit test-integration test-testenv test-integration-lib test-example test-guide test-fuzz test-bench lint demo bench bench-unit generate

test:
	@bash hack/stages.sh "$(MAKE)" $(STAGES)

## apiserver: build the test API server program once (4 to 8 minutes on 2 cores with
## empty Go caches, a minute with a warm build cache, nothing when it is cached).
apiserver:
	cd testenv && $(COMPILE) run ./cmd/testenv build >/dev/null

## test-unit: race-test every package of the library module (lint vets them).
test-unit:
	$(COMPILE) test $(NOVET) -race -count=1 ./...

## test-integration: testenv itself and the library against a real API server, side by
## side (their tests mostly wait for API servers); each one's output is printed whole when
## it ends.
test-integration:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-testenv test-integration-lib

test-testenv:
	cd testenv && $(LIB) vet ./... && $(LIB) test $(NOVET) -count=1 -timeout 20m ./...

test-integration-lib:
	cd integration && $(LIB) vet ./... && $(LIB) test $(NOVET) $(RACE) -count=1 -timeout 20m ./...

## build-tests: compile, without linking or running them, the tests, the commands and the vet
## data of the example, the guide and the benchmark (go list -export compiles what go test and
## go build would), controller-gen, and the benchmark's two programs (go build links them once;
## bench.sh finds them up to date), so that test-example, test-guide and test-bench only link and
## run (cold: minutes of compiling; warm: seconds).
build-tests:
	@set -e && export GOGC=$(BUILD_GOGC) && \
	cd example && $(LIB) vet ./... && \
	$(LIB) list -export -test -deps -race ./api/... ./config/... ./internal/... ./webapp/... ./cmd/webapp-operator/... >/dev/null && \
	$(LIB) list -export -test -deps $$($(LIB) list ./... | grep -E '/(e2e|reliability)($$|/)') ./cmd/... >/dev/null && \
	cd $(CURDIR)/$(GUIDE) && $(LIB) vet ./... && $(LIB) list -export -test -deps $(RACE) ./... >/dev/null && \
	$(LIB) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 --version >/dev/null && \
	cd $(CURDIR)/bench && $(LIB) vet ./... && $(LIB) list -export -test -deps ./... >/dev/null && \
	$(LIB) build -o $(BENCH_OUT)/contender ./cmd/contender && \
	$(LIB) build -o $(BENCH_OUT)/benchrun ./cmd/benchrun

## test-example: the example operator: race-tested units, then e2e and reliability against a real API server.
test-example:
	cd example && $(LIB) vet ./...
	$(MAKE) -C example test-unit GO="$(LIB)" TESTFLAGS=$(NOVET)
	$(MAKE) -C example test-e2e GO="$(LIB)" TESTFLAGS=$(NOVET)

## test-guide: the operator of docs/getting-started.md (docs/getting-started/greeting, a module
## of its own): controller-gen runs again and any change to the generated files fails; the
## guide's code blocks must be its files, and its commands of steps 0 to 4 must work in an empty
## directory (TestGuideCommands); its test runs against a real API server, race-detected.
GUIDE := docs/getting-started/greeting
test-guide:
	@old=$$(mktemp -d) && trap 'rm -rf "$$old"' EXIT && cp -r $(GUIDE)/api $(GUIDE)/config "$$old" && \
	(cd $(GUIDE)/api/v1alpha1 && $(LIB) generate) && \
	diff -r "$$old/api" $(GUIDE)/api && diff -r "$$old/config" $(GUIDE)/config || \
	{ echo "test-guide: controller-gen failed, or the generated files of $(GUIDE) were not up to date (see the diff above)"; exit 1; }
	cd $(GUIDE) && $(LIB) vet ./... && $(LIB) test $(NOVET) $(RACE) -count=1 -timeout 20m ./...

## test-fuzz: fuzz each target for FUZZTIME (not in `make test`, which runs the seed corpora).
test-fuzz:
	$(MAKE) -C example fuzz GO="$(LIB)" FUZZTIME=$(FUZZTIME)

## lint: fail on unformatted Go files anywhere in the repository, or on two modules (the test
## API server's included) that build packages of one module at different versions (they would
## compile them twice: hack/modversions.sh), then vet the library.
lint:
	@out=$$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@bash hack/modversions.sh
	$(COMPILE) vet ./...

## demo: build and run the demo (flags: make demo DEMO_FLAGS="--objects 50 --hold").
## The test API server program builds first (once, and says so); the demo binary then
## finds client-go, apimachinery and k8s.io/api compiled. Building both at once compiled
## those twice: 9m39s against 8m08s with empty caches on 2 cores (docs/ci.md).
demo:
	@cd testenv && $(COMPILE) run ./cmd/testenv build >/dev/null
	cd example && $(COMPILE) build -o ../bin/demo ./cmd/demo
	./bin/demo $(DEMO_FLAGS)

## generate: regenerate the example's deepcopy code and CRD YAML with controller-gen.
generate:
	$(MAKE) -C example generate GO="$(LIB)"

## bench-unit: the library's micro-benchmarks (see docs/benchmarks.md).
bench-unit:
	$(LIB) test -run '^$$' -bench . -benchmem ./...

## bench: the side-by-side benchmark against controller-runtime and plain client-go
## (15-45 minutes on 2 cores; BENCH_QUICK=1 for N=200 and one repetition).
bench:
	bash bench/bench.sh

## test-bench: the benchmark's unit tests and its smoke mode (every contender and phase end to
## end at N=50, about 25 s), so that its code never rots.
test-bench:
	cd bench && $(LIB) vet ./... && $(LIB) test $(NOVET) -count=1 ./...
	BENCH_SMOKE=1 bash bench/bench.sh
