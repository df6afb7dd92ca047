#!/usr/bin/env bash
# bench-follow.sh — what following a long run on workers costs the process
# that follows it: `skein run --db postgres://… -o json` of a foreach over
# N items, run by one `skein worker`.
#
#   scripts/bench-follow.sh [rounds]          (default 3 rounds)
#
# Environment: SKEIN=path times that binary instead of building one; BASE=path
# times that binary too, interleaved (an A/B: each binary gets a schema and
# a worker of its own, since a binary refuses a schema newer than it
# knows); SIZES (default "3000 30000") the numbers of items;
# SKEIN_TEST_POSTGRES_URL (default the local server) the database, in which
# the script makes its schemas and drops them at the end.
#
# Prints, for each binary and size, the medians of: the run's time as
# recorded (finished_at − started_at), the wall time of `skein run`, its
# lag (wall − recorded: what following adds to the user's wait), its CPU
# time (user + system) and its peak RSS.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-follow}
OUT=$BENCH_DIR/bin
SIZES=${SIZES:-3000 30000}
base=${SKEIN_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
mkdir -p "$BENCH_DIR/wf"
skein_binary "$OUT"
bins=(head)
if [[ -n ${BASE:-} ]]; then
	cp "$BASE" "$OUT/skein-base"
	bins+=(base)
fi
binary() { if [[ $1 == base ]]; then echo "$OUT/skein-base"; else echo "$OUT/skein"; fi; }
sep='?'
[[ $base == *\?* ]] && sep='&'
worker=
cleanup() {
	[[ -n $worker ]] && kill "$worker" 2>/dev/null || true
	wait 2>/dev/null || true
	for b in "${bins[@]}"; do psql -q "$base" -c "DROP SCHEMA IF EXISTS bench_follow_${b}_$$ CASCADE" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
for b in "${bins[@]}"; do
	psql -q "$base" -c "CREATE SCHEMA bench_follow_${b}_$$"
	"$(binary "$b")" migrate --db "$base${sep}search_path=bench_follow_${b}_$$" >/dev/null
done
foreach 100 "$BENCH_DIR/wf"
echo "# $(nproc) CPUs, $rounds rounds, $(cd "$root" && git rev-parse --short HEAD)${BASE:+ against $BASE}, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(machine_state)"
declare -A rec wall cpu rss
for ((r = 0; r < rounds; r++)); do
	for n in $SIZES; do
		for b in "${bins[@]}"; do
			schema=bench_follow_${b}_$$
			db="$base${sep}search_path=$schema"
			"$(binary "$b")" worker --db "$db" --dir "$BENCH_DIR/worker" >"$BENCH_DIR/worker.log" 2>&1 &
			worker=$!
			out=$(/usr/bin/time -f '%e %U %S %M' "$(binary "$b")" run --db "$db" --dir "$BENCH_DIR/runs" \
				"$BENCH_DIR/wf/foreach-100.yaml" -i n="$n" -o json 2>&1 >/dev/null | tail -1)
			kill "$worker"
			wait "$worker" 2>/dev/null || true
			worker=
			read -r w u s m <<<"$out"
			k="$b $n"
			rec[$k]+="$(($(recorded_us "$base" "$schema") / 1000)) "
			wall[$k]+="$(awk -v w="$w" 'BEGIN {printf "%d", w * 1000}') "
			cpu[$k]+="$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1000}') "
			rss[$k]+="$((m / 1024)) "
		done
	done
done
for n in $SIZES; do
	for b in "${bins[@]}"; do
		k="$b $n"
		rc=$(median "${rec[$k]}") wl=$(median "${wall[$k]}")
		printf '%-4s %6d items: run %6d ms, skein run wall %6d ms (lag %6d ms), CPU %6d ms, RSS %4d MiB   (walls: %s)\n' \
			"$b" "$n" "$rc" "$wl" $((wl - rc)) "$(median "${cpu[$k]}")" "$(median "${rss[$k]}")" "${wall[$k]}"
	done
done
