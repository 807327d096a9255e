#!/usr/bin/env bash
# Runs make targets in order, prints how long each took as it ends and a
# table of all of them, with the CPU time each used, at the end (also when
# one fails, which stops the run).
# A target written as bg:name starts in the background (its output goes to a
# log that is printed when it ends); the pseudo-target `wait` waits for the
# background ones. CPU-light stretches of one stage then overlap another.
#
#   hack/stages.sh make bg:apiserver lint test-unit wait test-integration ...
set -uo pipefail
make_cmd=$1
shift
names=() times=() cpus=() status=0 failed=""
bg_names=() bg_pids=() bg_starts=() bg_logs=()
logdir=$(mktemp -d)
trap 'for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$logdir"' EXIT

# cpu FILE writes into FILE the CPU seconds (user + system) of the calling
# shell's finished children: run at the end of a stage's subshell, the
# stage's. (times runs in this shell: in a pipe it would count nothing.)
cpu() {
	times >"$1.times" && awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%d\n", t }' "$1.times" >"$1"
}

fmt() { local s=$1; if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }

record() { # name seconds rc cpu-seconds
	names+=("$1") times+=("$2") cpus+=("${4:-0}")
	if (($3 != 0)); then
		echo ">> [$1] FAILED after $(fmt "$2")"
		status=$3 failed=$1
	else
		echo ">> [$1] done in $(fmt "$2")"
	fi
}

wait_background() {
	for i in "${!bg_pids[@]}"; do
		wait "${bg_pids[$i]}"
		local rc=$? end
		# The stage's own end (it may have ended long before this wait).
		end=$(cat "${bg_logs[$i]}.end" 2>/dev/null || date +%s)
		echo ">> [${bg_names[$i]}] output:"
		sed 's/^/   /' "${bg_logs[$i]}"
		record "${bg_names[$i]}" $((end - bg_starts[i])) "$rc" "$(cat "${bg_logs[$i]}.cpu" 2>/dev/null)"
	done
	bg_names=() bg_pids=() bg_starts=() bg_logs=()
}

all_start=$(date +%s)
for stage in "$@"; do
	if [[ $stage == wait ]]; then
		wait_background
	elif [[ $stage == bg:* ]]; then
		name=${stage#bg:}
		echo ">> [$name] started in the background at $(date +%H:%M:%S)"
		log="$logdir/$name.log"
		(
			# Killed (the trap below), it stops its make too.
			trap 'kill "$child" 2>/dev/null' TERM
			$make_cmd --no-print-directory "$name" >"$log" 2>&1 &
			child=$!
			wait "$child"
			rc=$?
			{ date +%s >"$log.end"; cpu "$log.cpu"; } 2>/dev/null # (the run may be over)
			exit $rc
		) &
		bg_names+=("$name") bg_pids+=($!) bg_starts+=("$(date +%s)") bg_logs+=("$log")
		continue
	else
		echo ">> [$stage] started at $(date +%H:%M:%S)"
		start=$(date +%s)
		(
			$make_cmd --no-print-directory "$stage"
			rc=$?
			cpu "$logdir/$stage.cpu"
			exit $rc
		)
		rc=$?
		record "$stage" $(($(date +%s) - start)) "$rc" "$(cat "$logdir/$stage.cpu" 2>/dev/null)"
	fi
	((status == 0)) || break
done
((status == 0)) && wait_background
echo ">> stage times (wall; CPU user+system of the stage's processes)"
total_cpu=0
for i in "${!names[@]}"; do
	printf '   %-18s %8s %8s\n' "${names[$i]}" "$(fmt "${times[$i]}")" "$(fmt "${cpus[$i]}")"
	total_cpu=$((total_cpu + cpus[i]))
done
printf '   %-18s %8s %8s%s\n' total "$(fmt $(($(date +%s) - all_start)))" "$(fmt "$total_cpu")" "${failed:+  (failed in $failed)}"
exit $status
