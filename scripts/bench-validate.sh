#!/usr/bin/env bash
# bench-validate.sh — time `skein validate` as a process on big mappings
# and on many aliases.
#
#   scripts/bench-validate.sh [rounds]            (default 5 rounds)
#
# Environment: SKEIN=path times that binary instead of building one;
# BEFORE=path times that binary too, side by side (e.g. one built from
# main); SIZES (default "10000 40000 160000"); BENCH_DIR (default
# ./tmp/bench-validate).
#
# Generates, for each size N,
#   values-N.yaml   a set node whose values map has N keys, each written out
#   aliases-N.yaml  a set node whose values map has N keys, each an alias
#                   (*v) of one anchored string: N aliases
# and runs `skein validate` on each file once per round, the files and
# binaries interleaved within a round. It prints the load (uptime), then
# per file and binary the median wall time and the median CPU time
# (user + system) and the exit code: 160,000 aliases are more than
# workflow.MaxAliasValues, so that file is refused (exit 2) by design.
set -euo pipefail
rounds=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-validate}
SIZES=${SIZES:-"10000 40000 160000"}
mkdir -p "$BENCH_DIR/wf"
if [[ -z ${SKEIN:-} ]]; then
	(cd "$root" && go build -o "$BENCH_DIR/skein" ./cmd/skein)
	SKEIN=$BENCH_DIR/skein
fi
bins=("$SKEIN")
[[ -n ${BEFORE:-} ]] && bins=("$BEFORE" "$SKEIN")

wf=$BENCH_DIR/wf
gen() { # gen values|aliases N
	{
		printf 'version: 1\nname: big-%s\nnodes:\n  - {id: start, type: trigger.manual}\n  - id: big\n    type: set\n    values:\n' "$1"
		if [[ $1 == aliases ]]; then
			printf '      base: &v some text\n'
			awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "      k%d: *v\n", i }'
		else
			awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "      k%d: value %d\n", i, i }'
		fi
		printf 'edges:\n  - {from: start, to: big}\n'
	} >"$wf/$1-$2.yaml"
}
files=()
for n in $SIZES; do
	for kind in values aliases; do
		gen "$kind" "$n"
		files+=("$kind-$n")
	done
done

echo "# $(nproc) CPUs, $rounds rounds, load:$(uptime | sed 's/.*load average://')"
out=$BENCH_DIR/times
rm -f "$out"
for ((r = 0; r < rounds; r++)); do
	for f in "${files[@]}"; do
		for b in "${bins[@]}"; do
			rc=0
			/usr/bin/time -f "%e %U %S" -o "$BENCH_DIR/one" "$b" validate "$wf/$f.yaml" >/dev/null 2>&1 || rc=$?
			echo "$f $b $rc $(tail -1 "$BENCH_DIR/one")" >>"$out"
		done
	done
done
echo "# load after:$(uptime | sed 's/.*load average://')"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-16s %-40s %5s %8s %8s\n' file binary exit wall_s cpu_s
for f in "${files[@]}"; do
	for b in "${bins[@]}"; do
		rows=$(awk -v f="$f" -v b="$b" '$1 == f && $2 == b' "$out")
		rc=$(awk '{ print $3 }' <<<"$rows" | tail -1)
		wall=$(awk '{ print $4 }' <<<"$rows" | median)
		cpu=$(awk '{ print $5 + $6 }' <<<"$rows" | median)
		printf '%-16s %-40s %5s %8s %8s\n' "$f" "$b" "$rc" "$wall" "$cpu"
	done
done
