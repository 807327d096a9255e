#!/usr/bin/env bash
# bench.sh builds the contender and the driver and runs the side-by-side
# benchmark (see docs/benchmarks.md). `make bench` calls it.
#
#   bench/bench.sh                 full mode: N=1000 with 1, 4 and 16 workers,
#                                  3 repetitions; then N=3000 with 4 workers, 1
#                                  repetition (15-45 min on 2 cores with the
#                                  four contenders, as busy as the machine is)
#   BENCH_QUICK=1 bench/bench.sh   quick mode: N=200, 4 workers, 1 repetition
#   BENCH_SMOKE=1 bench/bench.sh   smoke mode (make test): N=50, 4 workers, 1
#                                  repetition, no warm-up run, 200 ms settle
#                                  windows; it checks that every contender and
#                                  phase still runs end to end, its figures are
#                                  not for reading; it also runs limit-ready,
#                                  which the other modes run only when named
#                                  (--contenders ...,limit-ready)
#
# Extra arguments go to every benchrun invocation (e.g. --pin=false).
# BENCH_OUT (default bench/out) receives the binaries, the markdown tables,
# the raw JSON results and the contenders' logs.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${BENCH_OUT:-$here/out}"
mkdir -p "$out"
cd "$here"

GOWORK=off go build -o "$out/contender" ./cmd/contender
GOWORK=off go build -o "$out/benchrun" ./cmd/benchrun

run() {
	local name="$1"
	shift
	"$out/benchrun" --contender "$out/contender" --logdir "$out/logs-$name" \
		--markdown "$out/$name.md" --json "$out/$name.json" "$@"
}

if [[ "${BENCH_SMOKE:-}" == "1" ]]; then
	run smoke --runs 50x4 --repeat 1 --warmup 0 --settle 200ms \
		--contenders operatorkit,operatorkit-readme,controller-runtime,limit,limit-ready "$@"
elif [[ "${BENCH_QUICK:-}" == "1" ]]; then
	run quick --runs 200x4 --repeat 1 "$@"
else
	run n1000 --runs 1000x1,1000x4,1000x16 --repeat 3 "$@"
	run n3000 --runs 3000x4 --repeat 1 "$@"
fi
