#!/usr/bin/env bash
# bench-cli.sh — time `skein run` as a process on generated workflows.
#
#   scripts/bench-cli.sh [rounds]            (default 7 rounds)
#
# Environment: SKEIN=path times that binary instead of building one;
# BASE=path times that binary too, interleaved run by run with the first
# (make bench builds the previous commit for it), and prints each figure's
# ratio now / base; BENCH_DIR, FOREACH_SIZES and LOOP_SIZES as below.
#
# Builds the binary (go build -o $OUT/skein ./cmd/skein), generates
#   chain-N.yaml    a trigger and N `set` nodes in a row        (N = 100, 1000)
#   foreach-N.yaml  a foreach over N items, one `set` per item  (N = 100, 1000, 10000)
#   loop-N.yaml     a loop of N iterations, one `set` per pass  (N = 100, 1000, 10000)
#   three.yaml      a trigger and 2 `set` nodes (the cold-start run)
# and runs each workflow once per round, the workflows interleaved within a
# round so that load from other processes spreads over all of them (with
# BASE, the two binaries one after the other, in turn first). Every run
# gets its own --dir under $BENCH_DIR (default ./tmp/bench-cli, on the
# project's disk: keep it off tmpfs, the figures are about the real disk).
# It prints the median wall time and CPU time (user + system) of each
# workflow and the derived figures, against the targets of the performance
# work:
#   chain per node   (t1000 − t100) / 900          target ≤ 25 µs
#   foreach per item t(N) / N, and 10,000 / 1,000   target ≤ 30 µs, flat
#   foreach per added item (t1000 − t100) / 900, the chain's measure: what
#                    an item costs once the process has started
#   loop per pass    t(N) / N
#   cold 3-node run  median                         target ≤ 15 ms
#   and its minor page faults (median of 3 more runs: what the process touches),
#   and the same for the chains and the 10,000-item foreach: the new pages a
#   node and an item take, a count that moves only when the code does
#   chain CPU per node and the cold run's CPU: the same figures in CPU time,
#   which the load of a shared machine moves less than the wall time
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
bins=(now)
if [[ -n ${BASE:-} ]]; then
	cp "$BASE" "$OUT/skein-base"
	bins=(now base)
fi
binary() { if [[ $1 == base ]]; then echo "$OUT/skein-base"; else echo "$OUT/skein"; fi; }
echo "# $(df -T "$BENCH_DIR" | awk 'NR==2 {print $2" on "$7}'), $(nproc) CPUs, $rounds rounds, $(cd "$root" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(machine_state)"

wf=$BENCH_DIR/wf
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
for n in $FOREACH_SIZES; do foreach "$n" "$wf"; names+=("foreach-$n"); done
for n in $LOOP_SIZES; do loop "$n"; names+=("loop-$n"); done

declare -A times cpus
for ((r = 0; r < rounds; r++)); do
	order=("${bins[@]}")
	if ((r % 2 == 1 && ${#bins[@]} == 2)); then order=(base now); fi
	for name in "${names[@]}"; do
		for bin in "${order[@]}"; do
			d=$BENCH_DIR/runs/$bin-$name-$r
			rm -rf "$d"
			if ! t=$(timed "$BENCH_DIR/stderr" "$(binary "$bin")" run --dir "$d" "$wf/$name.yaml"); then
				echo "skein run $name ($bin) failed:" >&2
				cat "$BENCH_DIR/stderr" >&2
				exit 1
			fi
			times[$bin,$name]+="${t% *} "
			cpus[$bin,$name]+="${t#* } "
		done
	done
done
# Minor page faults, a median of 3 per binary: the cold run's, and the
# chains' and the biggest foreach's for the pages a node and an item take
# (new pages, the machine's dearest work in its slow state; a count that
# moves only when the code does).
declare -A faults
fault_names=(three chain-100 chain-1000)
if [[ " $FOREACH_SIZES " == *" 10000 "* ]]; then fault_names+=(foreach-10000); fi
for bin in "${bins[@]}"; do
	for name in "${fault_names[@]}"; do
		for r in 1 2 3; do
			faults[$bin,$name]+="$(minor_faults "$(binary "$bin")" run --dir "$BENCH_DIR/runs/faults-$bin-$name-$r" "$wf/$name.yaml") "
		done
	done
done
# Removed at the end, not after each run: ext4 skips inodes freed in the
# last seconds when it allocates new ones, and a run made right after
# thousands of deletions pays for scanning past them (up to ~40 µs a node
# here) — a cost of the benchmark, not of a run.
rm -rf "$BENCH_DIR/runs"

declare -A med cpu fig
for bin in "${bins[@]}"; do
	for name in "${names[@]}"; do
		med[$bin,$name]=$(median "${times[$bin,$name]}")
		cpu[$bin,$name]=$(median "${cpus[$bin,$name]}")
		printf '%-5s %-14s median %9d µs, CPU %9d µs   runs: %s\n' "$bin" "$name" "${med[$bin,$name]}" "${cpu[$bin,$name]}" "${times[$bin,$name]}"
	done
	fig[$bin,chain]=$(awk -v a="${med[$bin,chain-100]}" -v b="${med[$bin,chain-1000]}" 'BEGIN {printf "%.1f", (b-a)/900}')
	fig[$bin,chaincpu]=$(awk -v a="${cpu[$bin,chain-100]}" -v b="${cpu[$bin,chain-1000]}" 'BEGIN {printf "%.1f", (b-a)/900}')
	fig[$bin,coldcpu]=$(awk -v t="${cpu[$bin,three]}" 'BEGIN {printf "%.1f", t/1000}')
	for n in $FOREACH_SIZES; do fig[$bin,foreach-$n]=$(awk -v t="${med[$bin,foreach-$n]}" -v n="$n" 'BEGIN {printf "%.1f", t/n}'); done
	if [[ -n ${med[$bin,foreach-100]:-} && -n ${med[$bin,foreach-1000]:-} ]]; then
		fig[$bin,foreachadded]=$(awk -v a="${med[$bin,foreach-100]}" -v b="${med[$bin,foreach-1000]}" 'BEGIN {printf "%.1f", (b-a)/900}')
	fi
	for n in $LOOP_SIZES; do fig[$bin,loop-$n]=$(awk -v t="${med[$bin,loop-$n]}" -v n="$n" 'BEGIN {printf "%.1f", t/n}'); done
	fig[$bin,cold]=$(awk -v t="${med[$bin,three]}" 'BEGIN {printf "%.1f", t/1000}')
	fig[$bin,faults]=$(median "${faults[$bin,three]}")
	fig[$bin,chainpages]=$(awk -v a="$(median "${faults[$bin,chain-100]}")" -v b="$(median "${faults[$bin,chain-1000]}")" 'BEGIN {printf "%.2f", (b-a)/900}')
	if [[ -n ${faults[$bin,foreach-10000]:-} ]]; then
		fig[$bin,foreachpages]=$(awk -v f="$(median "${faults[$bin,foreach-10000]}")" 'BEGIN {printf "%.2f", f/10000}')
	fi
done
# line LABEL KEY UNIT TARGET: a figure, its ratio to the target and, with
# BASE, to the base binary's.
line() {
	local out
	out=$(printf '%-34s %8s %s' "$1" "${fig[now,$2]}" "$3")
	if [[ -n $4 ]]; then out+=$(awk -v v="${fig[now,$2]}" -v t="$4" 'BEGIN {printf "   (target ≤ %s: ratio %.2f)", t, v/t}'); fi
	if [[ ${#bins[@]} == 2 ]]; then out+=$(awk -v v="${fig[now,$2]}" -v b="${fig[base,$2]}" 'BEGIN {printf "   base %s, now/base %.2f", b, (b > 0 ? v/b : 0)}'); fi
	echo "$out"
}
echo
line "chain per node (t1000-t100)/900:" chain µs 25
for n in $FOREACH_SIZES; do line "foreach $n items, per item:" "foreach-$n" µs 30; done
if [[ -n ${fig[now,foreachadded]:-} ]]; then line "foreach per added item (t1000-t100)/900:" foreachadded µs 30; fi
for n in $LOOP_SIZES; do line "loop $n passes, per pass:" "loop-$n" µs ""; done
if [[ -n ${med[now,foreach-1000]:-} && -n ${med[now,foreach-10000]:-} ]]; then
	awk -v a="${fig[now,foreach-1000]}" -v b="${fig[now,foreach-10000]}" 'BEGIN {printf "foreach per item 10,000 / 1,000: %.2f (flat: ≤ 1.1)\n", b/a}'
fi
line "cold 3-node run:" cold ms 15
line "cold 3-node run, minor faults:" faults "" ""
line "chain pages per node (f1000-f100)/900:" chainpages "" ""
if [[ -n ${fig[now,foreachpages]:-} ]]; then line "foreach 10000 items, pages per item:" foreachpages "" ""; fi
line "chain CPU per node (c1000-c100)/900:" chaincpu µs ""
line "cold 3-node run, CPU:" coldcpu ms ""
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
