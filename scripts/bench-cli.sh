#!/usr/bin/env bash
# bench-cli.sh — time `skein run` as a process on generated workflows.
#
#   scripts/bench-cli.sh [rounds]            (default 7 rounds)
#
# Environment: SKEIN=path times that binary instead of building one;
# BENCH_DIR, FOREACH_SIZES and LOOP_SIZES as below.
#
# Builds the binary (go build -o $OUT/skein ./cmd/skein), generates
#   chain-N.yaml    a trigger and N `set` nodes in a row        (N = 100, 1000)
#   foreach-N.yaml  a foreach over N items, one `set` per item  (N = 100, 1000, 10000)
#   loop-N.yaml     a loop of N iterations, one `set` per pass  (N = 100, 1000, 10000)
#   three.yaml      a trigger and 2 `set` nodes (the cold-start run)
# and runs each workflow once per round, the workflows interleaved within a
# round so that load from other processes spreads over all of them. Every
# run gets its own --dir under $BENCH_DIR (default ./tmp/bench-cli, on the
# project's disk: keep it off tmpfs, the figures are about the real disk).
# It prints the median wall time of each workflow and the derived figures:
#   chain per node   (t1000 − t100) / 900
#   foreach per item t(N) / N, and the 10,000 / 1,000 ratio
#   loop per pass    t(N) / N
#   cold 3-node run  median
set -euo pipefail
rounds=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-cli}
OUT=$BENCH_DIR/bin
FOREACH_SIZES=${FOREACH_SIZES:-"100 1000 10000"}
LOOP_SIZES=${LOOP_SIZES:-"100 1000 10000"}
mkdir -p "$BENCH_DIR/wf"
skein_binary "$OUT"
echo "# $(df -T "$BENCH_DIR" | awk 'NR==2 {print $2" on "$7}'), $(nproc) CPUs, $rounds rounds, $(cd "$root" && git rev-parse --short HEAD)"

wf=$BENCH_DIR/wf
foreach() { # foreach N
	cat >"$wf/foreach-$1.yaml" <<YAML
version: 1
name: foreach
inputs:
  n: {type: integer, default: $1}
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..inputs.n }}"}
  - {id: item, type: set, values: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: set, values: {n: "{{ len(each.items) }}"}}
edges:
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
YAML
}
loop() { # loop N
	cat >"$wf/loop-$1.yaml" <<YAML
version: 1
name: loop
nodes:
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, max_iterations: $1}
  - {id: body, type: set, vars: {n: "{{ (vars.n ?? 0) + 1 }}"}}
  - {id: next, type: endloop, loop: lp}
  - {id: done, type: set, values: {n: "{{ vars.n }}"}}
edges:
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: next}
  - {from: lp, to: done, on: done}
YAML
}
names=(three chain-100 chain-1000)
chain 2 "$wf" && mv "$wf/chain-2.yaml" "$wf/three.yaml"
chain 100 "$wf"
chain 1000 "$wf"
for n in $FOREACH_SIZES; do foreach "$n"; names+=("foreach-$n"); done
for n in $LOOP_SIZES; do loop "$n"; names+=("loop-$n"); done

declare -A times
for ((r = 0; r < rounds; r++)); do
	for name in "${names[@]}"; do
		d=$BENCH_DIR/runs/$name-$r
		rm -rf "$d"
		s=$(date +%s%N)
		if ! "$OUT/skein" run --dir "$d" "$wf/$name.yaml" >/dev/null 2>"$BENCH_DIR/stderr"; then
			echo "skein run $name failed:" >&2
			cat "$BENCH_DIR/stderr" >&2
			exit 1
		fi
		e=$(date +%s%N)
		times[$name]+="$(((e - s) / 1000)) "
	done
done
# Removed at the end, not after each run: ext4 skips inodes freed in the
# last seconds when it allocates new ones, and a run made right after
# thousands of deletions pays for scanning past them (up to ~40 µs a node
# here) — a cost of the benchmark, not of a run.
rm -rf "$BENCH_DIR/runs"

declare -A med
for name in "${names[@]}"; do
	med[$name]=$(median "${times[$name]}")
	printf '%-14s median %9d µs   runs: %s\n' "$name" "${med[$name]}" "${times[$name]}"
done
echo
awk -v a="${med[chain-100]}" -v b="${med[chain-1000]}" 'BEGIN {printf "chain per node (t1000-t100)/900: %.1f µs (target ≤ 50: ratio %.2f)\n", (b-a)/900, (b-a)/900/50}'
for n in $FOREACH_SIZES; do awk -v t="${med[foreach-$n]}" -v n="$n" 'BEGIN {printf "foreach %6d items: %.1f µs per item (target ≤ 60: ratio %.2f)\n", n, t/n, t/n/60}'; done
for n in $LOOP_SIZES; do awk -v t="${med[loop-$n]}" -v n="$n" 'BEGIN {printf "loop    %6d passes: %.1f µs per pass\n", n, t/n}'; done
if [[ -n ${med[foreach-1000]:-} && -n ${med[foreach-10000]:-} ]]; then
	awk -v a="${med[foreach-1000]}" -v b="${med[foreach-10000]}" 'BEGIN {printf "foreach per item 10,000 / 1,000: %.2f (target ≤ 1.5)\n", (b/10000)/(a/1000)}'
fi
if [[ -n ${med[loop-1000]:-} && -n ${med[loop-10000]:-} ]]; then
	awk -v a="${med[loop-1000]}" -v b="${med[loop-10000]}" 'BEGIN {printf "loop per pass 10,000 / 1,000: %.2f\n", (b/10000)/(a/1000)}'
fi
awk -v t="${med[three]}" 'BEGIN {printf "cold 3-node run: %.1f ms (target ≤ 30: ratio %.2f)\n", t/1000, t/1000/30}'
