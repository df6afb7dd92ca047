#!/usr/bin/env bash
# bench-child.sh — time the nodes of a subworkflow's child run on a worker:
# a queued run whose one node runs, as its child, a chain of N `http` nodes
# (each a GET of a local server that answers at once; N = 20, 100).
#
#   scripts/bench-child.sh [rounds]          (default 5 rounds, 2 not counted first)
#
# Environment: SKEIN=path times that binary instead of building one;
# BASELINE=path times that binary too, interleaved with it (A/B: each its
# own schema and `skein worker`); SKEIN_TEST_POSTGRES_URL (default the
# local server) is the database, in which the script makes its schemas and
# drops them at the end.
#
# Prints, for each binary, the median of the child run's time as recorded
# (finished_at − started_at in the database) and the per-node figure
# (d100 − d20) / 80. A child's nodes on a worker start once the end of the
# node before them is committed (docs/running.md, Subworkflows), so each
# node of the chain pays a commit.
set -euo pipefail
rounds=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-child}
base=${SKEIN_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
sep='?'
[[ $base == *\?* ]] && sep='&'
mkdir -p "$BENCH_DIR/wf"
skein_binary "$BENCH_DIR/this"
names=(this)
if [[ -n ${BASELINE:-} ]]; then
	mkdir -p "$BENCH_DIR/baseline" && cp "$BASELINE" "$BENCH_DIR/baseline/skein"
	names+=(baseline)
fi
port=${PORT:-18767}
answer_http "$port" 0
pids=($!)
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for v in "${names[@]}"; do psql -q "$base" -c "DROP SCHEMA IF EXISTS bench_child_${v}_$$ CASCADE" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
wf=$BENCH_DIR/wf
for n in 20 100; do
	{
		printf 'version: 1\nname: http\nnodes:\n'
		for ((i = 0; i < n; i++)); do printf '  - {id: h%d, type: http, method: GET, url: "http://127.0.0.1:%d/x"}\n' "$i" "$port"; done
		printf 'edges:\n'
		for ((i = 1; i < n; i++)); do printf '  - {from: h%d, to: h%d}\n' $((i - 1)) "$i"; done
	} >"$wf/http-$n.yaml"
	printf 'version: 1\nname: parent\nnodes:\n  - {id: sub, type: subworkflow, workflow: http-%d.yaml}\n' "$n" >"$wf/parent-$n.yaml"
done
declare -A db
for v in "${names[@]}"; do
	schema=bench_child_${v}_$$
	psql -q "$base" -c "CREATE SCHEMA $schema"
	db[$v]="$base${sep}search_path=$schema"
	"$BENCH_DIR/$v/skein" migrate --db "${db[$v]}" >/dev/null
	"$BENCH_DIR/$v/skein" worker --db "${db[$v]}" --dir "$BENCH_DIR/worker-$v" --concurrency 4 >"$BENCH_DIR/worker-$v.log" 2>&1 &
	pids+=($!)
done
echo "# $(nproc) CPUs, $rounds rounds after 2 not counted, $(cd "$root" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(machine_state)"
declare -A rec
for ((r = -2; r < rounds; r++)); do
	for n in 20 100; do
		for v in "${names[@]}"; do
			"$BENCH_DIR/$v/skein" run --db "${db[$v]}" --queue --dir "$BENCH_DIR/runs" "$wf/parent-$n.yaml" >/dev/null
			((r < 0)) && continue
			# The child starts after its parent: the latest run is the child.
			rec[$v-$n]+="$(recorded_us "$base" "bench_child_${v}_$$") "
		done
	done
done
for v in "${names[@]}"; do
	a=$(median "${rec[$v-20]}")
	b=$(median "${rec[$v-100]}")
	printf '%-8s child of 20 http nodes: median %6d µs (%s); of 100: median %6d µs (%s)\n' "$v" "$a" "${rec[$v-20]}" "$b" "${rec[$v-100]}"
	awk -v a="$a" -v b="$b" -v v="$v" 'BEGIN {printf "%-8s per node of the child, (d100 - d20) / 80: %.2f ms\n", v, (b - a) / 80 / 1000}'
done
