#!/usr/bin/env bash
# bench-queue.sh — time a chain through `skein run --db postgres://…` and
# `skein worker` processes: the distributed figure as a user pays it.
#
#   scripts/bench-queue.sh [rounds]          (default 5 rounds)
#
# Environment: SKEIN=path times that binary instead of building one;
# SKEIN_TEST_POSTGRES_URL (default the local server) is the database, in
# which the script makes a schema of its own and drops it at the end;
# WORKERS (default 1) skein worker processes, each with --concurrency 4;
# WARMUP (default 3) rounds run first and not counted, so that the figures
# are a worker's past its first collections, as a user's long-running
# worker is: until its first collection a new worker takes every page of
# its heap new, which in the machine's slow state costs ~11 µs a page
# (BENCHMARKS.md, 2026-12-06). WARMUP=0 measures a new worker.
#
# Generates chain-N.yaml, a trigger and N `set` nodes in a row, and
# http-N.yaml, N `http` nodes in a row, each a GET of a local server that
# answers at once (python3) (N = 20, 200); runs each once per round
# (interleaved) with `skein run --db URL --queue` following the run while
# the workers run its nodes, and prints, for each, the median of the run's
# time as recorded (its finished_at − started_at in the database) and of
# the wall time of `skein run` (which sees the end at its next look at the
# run: it looks every 100 ms, so its wall times are steps of ~100 ms and
# say nothing of a node's cost). The per-node figures are of the recorded
# times, (d200 − d20) / 180, which leave out the run's first and last
# transactions: `set` is a pure kind, whose nodes a worker runs in the
# transaction that released them (target ≤ 0.5 ms); an `http` node is a job
# and a transaction of its own, and its figure holds the server's answer
# (target ≤ 1.0 ms). Beside it, the CPU time (user + system, from /proc)
# that every postgres process, the workers and the answering server spent
# over the http-200 runs, per node: a chain's hop is those three one after
# the other.
set -euo pipefail
rounds=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-queue}
OUT=$BENCH_DIR/bin
WORKERS=${WORKERS:-1}
base=${SKEIN_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
mkdir -p "$BENCH_DIR/wf"
skein_binary "$OUT"
port=${PORT:-18766}
answer_http "$port" 0
server=$!
schema=bench_queue_$$
psql -q "$base" -c "CREATE SCHEMA $schema"
sep='?'
[[ $base == *\?* ]] && sep='&'
db="$base${sep}search_path=$schema"
pids=("$server")
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	psql -q "$base" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$OUT/skein" migrate --db "$db" >/dev/null
for ((i = 0; i < WORKERS; i++)); do
	"$OUT/skein" worker --db "$db" --dir "$BENCH_DIR/worker-$i" --concurrency 4 >"$BENCH_DIR/worker-$i.log" 2>&1 &
	pids+=($!)
done
echo "# $(nproc) CPUs, $WORKERS worker(s), $rounds rounds after ${WARMUP:-3} not counted, $(cd "$root" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(machine_state)"

wf=$BENCH_DIR/wf
chain 20 "$wf"
chain 200 "$wf"
for n in 20 200; do
	{
		printf 'version: 1\nname: http\nnodes:\n'
		for ((i = 0; i < n; i++)); do printf '  - {id: h%d, type: http, method: GET, url: "http://127.0.0.1:%d/x"}\n' "$i" "$port"; done
		printf 'edges:\n'
		for ((i = 1; i < n; i++)); do printf '  - {from: h%d, to: h%d}\n' $((i - 1)) "$i"; done
	} >"$wf/http-$n.yaml"
done
names=(chain-20 chain-200 http-20 http-200)
declare -A times recorded
# stat_sum FIELDS PID... — FIELDS (an awk expression of /proc/PID/stat's
# fields) summed over the processes: '$14 + $15' their user + system
# clock ticks, '$10' their minor page faults (in the machine's slow state
# each costs ~10 µs, BENCHMARKS.md).
stat_sum() {
	local f=$1 t=0 p
	shift
	for p in "$@"; do t=$((t + $(awk "{print $f}" "/proc/$p/stat" 2>/dev/null || echo 0))); done
	echo "$t"
}
# stat_now FIELDS — stat_sum of every postgres process, of the workers and
# of the answering server.
stat_now() {
	# shellcheck disable=SC2046
	echo "$(stat_sum "$1" $(pgrep -x postgres)) $(stat_sum "$1" "${pids[@]:1}") $(stat_sum "$1" "$server")"
}
hz=$(getconf CLK_TCK)
cpu_pg=0 cpu_workers=0 cpu_server=0 flt_pg=0 flt_workers=0 flt_server=0
WARMUP=${WARMUP:-3}
for ((r = -WARMUP; r < rounds; r++)); do
	for name in "${names[@]}"; do
		if ((r < 0)); then
			"$OUT/skein" run --db "$db" --queue --dir "$BENCH_DIR/runs" "$wf/$name.yaml" >/dev/null 2>"$BENCH_DIR/stderr" || {
				echo "skein run $name failed:" >&2
				cat "$BENCH_DIR/stderr" >&2
				exit 1
			}
			continue
		fi
		[[ $name == http-200 ]] && read -r pg0 w0 h0 < <(stat_now '$14 + $15') && read -r fp0 fw0 fh0 < <(stat_now '$10')
		s=$(date +%s%N)
		if ! "$OUT/skein" run --db "$db" --queue --dir "$BENCH_DIR/runs" "$wf/$name.yaml" >/dev/null 2>"$BENCH_DIR/stderr"; then
			echo "skein run $name failed:" >&2
			cat "$BENCH_DIR/stderr" >&2
			exit 1
		fi
		e=$(date +%s%N)
		if [[ $name == http-200 ]]; then
			read -r pg1 w1 h1 < <(stat_now '$14 + $15')
			cpu_pg=$((cpu_pg + pg1 - pg0)) cpu_workers=$((cpu_workers + w1 - w0)) cpu_server=$((cpu_server + h1 - h0))
			read -r fp1 fw1 fh1 < <(stat_now '$10')
			flt_pg=$((flt_pg + fp1 - fp0)) flt_workers=$((flt_workers + fw1 - fw0)) flt_server=$((flt_server + fh1 - fh0))
		fi
		times[$name]+="$(((e - s) / 1000)) "
		recorded[$name]+="$(recorded_us "$base" "$schema") "
	done
done
declare -A med
for name in "${names[@]}"; do
	med[$name]=$(median "${recorded[$name]}")
	printf '%-10s recorded median %9d µs   runs: %s\n' "$name" "${med[$name]}" "${recorded[$name]}"
	printf '%-10s skein run median %8d µs   runs: %s\n' "" "$(median "${times[$name]}")" "${times[$name]}"
done
awk -v a="${med[chain-20]}" -v b="${med[chain-200]}" 'BEGIN {printf "distributed chain of set nodes (pure), per node (d200-d20)/180: %.3f ms (target ≤ 0.5 ms: ratio %.2f)\n", (b-a)/180/1000, (b-a)/180/1000/0.5}'
awk -v a="${med[http-20]}" -v b="${med[http-200]}" 'BEGIN {printf "distributed chain of http nodes, per node (d200-d20)/180: %.3f ms (target ≤ 1.0 ms: ratio %.2f)\n", (b-a)/180/1000, (b-a)/180/1000}'
awk -v p="$cpu_pg" -v w="$cpu_workers" -v h="$cpu_server" -v hz="$hz" -v n=$((200 * rounds)) 'BEGIN {
	f = 1e6 / hz / n
	printf "CPU per http node over the http-200 runs: postgres %.0f µs, worker(s) %.0f µs, the answering server %.0f µs (sum %.0f µs)\n", p * f, w * f, h * f, (p + w + h) * f
}'
awk -v p="$flt_pg" -v w="$flt_workers" -v h="$flt_server" -v n=$((200 * rounds)) 'BEGIN {
	printf "minor page faults per http node: postgres %.1f, worker(s) %.1f, the answering server %.1f\n", p / n, w / n, h / n
}'
