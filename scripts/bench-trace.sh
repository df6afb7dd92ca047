#!/usr/bin/env bash
# bench-trace.sh — the cost of `skein run --trace nodes`, per node, with
# `skein` as a process.
#
#   scripts/bench-trace.sh [rounds]          (default 9 rounds)
#
# Environment: SKEIN=path times that binary instead of building one;
# BENCH_DIR (default ./tmp/bench-trace, on the project's disk: keep it off
# tmpfs, the figures are about the real disk); SIZES (default "200 1000").
#
# Builds the binary (go build -o $OUT/skein ./cmd/skein), generates
#   chain-N.yaml   a trigger and N `set` nodes in a row
# and runs each chain with the default layout and with --trace nodes, once
# each per round, the four runs interleaved within a round so that load
# from other processes spreads over all of them. Every run gets its own
# --dir. It prints the median wall time and CPU time (user + sys, from
# bash's time: less sensitive than wall time to other processes on the
# machine) of each and, per size, the cost of the option per node:
# (median traced − median default) / (N + 1), the trigger being a node too;
# and the node files written (a check that the traced runs wrote them).
set -euo pipefail
rounds=${1:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-trace}
OUT=$BENCH_DIR/bin
SIZES=${SIZES:-"200 1000"}
mkdir -p "$BENCH_DIR/wf"
skein_binary "$OUT"
echo "# $(df -T "$BENCH_DIR" | awk 'NR==2 {print $2" on "$7}'), $(nproc) CPUs, $rounds rounds, $(cd "$root" && git rev-parse --short HEAD)"
echo "# before: $(uptime)"

wf=$BENCH_DIR/wf
for n in $SIZES; do chain "$n" "$wf"; done

TIMEFORMAT='%3U %3S' # bash's time: user and system CPU seconds
declare -A times
declare -A cpu
declare -A files
for ((r = 0; r < rounds; r++)); do
	for n in $SIZES; do
		for mode in run nodes; do
			name=chain-$n-$mode
			d=$BENCH_DIR/runs/$name-$r
			rm -rf "$d"
			s=$(date +%s%N)
			if ! { time "$OUT/skein" run --dir "$d" --trace "$mode" "$wf/chain-$n.yaml" >/dev/null 2>"$BENCH_DIR/stderr"; } 2>"$BENCH_DIR/cpu"; then
				echo "skein run $name failed:" >&2
				cat "$BENCH_DIR/stderr" >&2
				exit 1
			fi
			e=$(date +%s%N)
			times[$name]+="$(((e - s) / 1000)) "
			cpu[$name]+="$(awk '{printf "%d", ($1 + $2) * 1000000}' "$BENCH_DIR/cpu") "
			files[$name]=$(find "$d/runs" -mindepth 4 -name run.json | wc -l)
		done
	done
done
# Removed at the end, not after each run (see bench-cli.sh: ext4 skips
# inodes freed in the last seconds).
rm -rf "$BENCH_DIR/runs"
echo "# after:  $(uptime)"

declare -A med
declare -A cmed
for n in $SIZES; do
	for mode in run nodes; do
		name=chain-$n-$mode
		med[$name]=$(median "${times[$name]}")
		cmed[$name]=$(median "${cpu[$name]}")
		printf '%-16s wall median %9d µs   CPU (user+sys) median %9d µs   node run.json files %5d\n' "$name" "${med[$name]}" "${cmed[$name]}" "${files[$name]}"
		printf '%-16s wall runs: %s\n' "" "${times[$name]}"
	done
done
echo
for n in $SIZES; do
	awk -v a="${med[chain-$n-run]}" -v b="${med[chain-$n-nodes]}" -v n="$n" \
		'BEGIN {printf "chain of %d, wall: default %.1f µs a node, --trace nodes %.1f µs a node: the option costs %.1f µs a node (%+.0f%%)\n", n, a/(n+1), b/(n+1), (b-a)/(n+1), (b-a)/a*100}'
	awk -v a="${cmed[chain-$n-run]}" -v b="${cmed[chain-$n-nodes]}" -v n="$n" \
		'BEGIN {printf "chain of %d, CPU:  default %.1f µs a node, --trace nodes %.1f µs a node: the option costs %.1f µs a node (%+.0f%%)\n", n, a/(n+1), b/(n+1), (b-a)/(n+1), (b-a)/a*100}'
done
