#!/usr/bin/env bash
# bench-slot.sh — the time a 20 ms `http` node holds a worker's slot, as a
# user pays it: one `skein worker --concurrency 10` on Postgres, fan-outs of
# 40 and 400 http nodes (each a GET answered after 20 ms by a local server)
# run through `skein run --db URL --queue`.
#
#   scripts/bench-slot.sh [rounds]          (default 3)
#
# Environment: SKEIN=path times that binary instead of building one;
# SKEIN_TEST_POSTGRES_URL (default the local server) is the database, in
# which the script makes a schema of its own and drops it at the end.
# Needs python3 (the 20 ms server).
#
# Prints, per round, slot time = 10 slots × (d400 − d40) / 360, against
# issue 29's target ≤ 24 ms, where d is the run's recorded time
# (recorded_us: the wall time of `skein run` moves in steps of ~100 ms).
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-slot}
OUT=$BENCH_DIR/bin
base=${SKEIN_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
mkdir -p "$BENCH_DIR/wf"
skein_binary "$OUT"
port=18765
answer_http "$port" 20
pids=($!)
schema=bench_slot_$$
sep='?'
[[ $base == *\?* ]] && sep='&'
db="$base${sep}search_path=$schema"
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	psql -q "$base" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
psql -q "$base" -c "CREATE SCHEMA $schema"
"$OUT/skein" migrate --db "$db" >/dev/null
"$OUT/skein" worker --db "$db" --dir "$BENCH_DIR/worker" --concurrency 10 >"$BENCH_DIR/worker.log" 2>&1 &
pids+=($!)
for n in 40 400; do
	{
		echo "version: 1"
		echo "name: fan$n"
		echo "nodes:"
		for ((i = 1; i <= n; i++)); do echo "  - {id: h$i, type: http, method: GET, url: \"http://127.0.0.1:$port/x\"}"; done
	} >"$BENCH_DIR/wf/fan$n.yaml"
done
echo "# $(nproc) CPUs, 1 worker of 10 slots, $rounds rounds, $(cd "$root" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(machine_state)"
for ((r = 0; r < rounds; r++)); do
	declare -A t
	for n in 40 400; do
		"$OUT/skein" run --db "$db" --queue --dir "$BENCH_DIR/runs" "$BENCH_DIR/wf/fan$n.yaml" >/dev/null
		t[$n]=$(recorded_us "$base" "$schema")
	done
	awk -v a="${t[40]}" -v b="${t[400]}" 'BEGIN {s = 10 * (b - a) / 360 / 1000; printf "d40 %.1f ms, d400 %.1f ms: slot time %.2f ms (target ≤ 24 ms: ratio %.2f)\n", a / 1000, b / 1000, s, s / 24}'
done
