#!/usr/bin/env bash
# bench-busy.sh — a cold `skein run` on a machine that is writing: before
# each run another process writes MB megabytes to the same file system
# without syncing them (a build, a download), and the run's wall time is
# taken.
#
#   scripts/bench-busy.sh [rounds] [MB]      (default 7 rounds, 200 MB)
#
# Environment: SKEIN=path times that binary instead of building one;
# BASE=path times that binary too, interleaved run by run; BENCH_DIR as in
# bench-cli.sh (default ./tmp/bench-busy, on the project's disk). Prints
# the median wall time of each binary's three-node run.
set -euo pipefail
rounds=${1:-7}
mb=${2:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-busy}
rm -rf "$BENCH_DIR/runs" && mkdir -p "$BENCH_DIR/runs"
skein_binary "$BENCH_DIR/bin"
bins=(now)
if [[ -n ${BASE:-} ]]; then
	cp "$BASE" "$BENCH_DIR/bin/skein-base"
	bins=(now base)
fi
chain 2 "$BENCH_DIR"
echo "# $(df -T "$BENCH_DIR" | awk 'NR==2 {print $2" on "$7}'), $(nproc) CPUs, $rounds rounds, $mb MB written before each run, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A times
for ((r = 1; r <= rounds; r++)); do
	for bin in "${bins[@]}"; do
		exe=$BENCH_DIR/bin/skein
		[[ $bin == base ]] && exe=$BENCH_DIR/bin/skein-base
		dd if=/dev/zero of="$BENCH_DIR/runs/written" bs=1M count="$mb" status=none
		s=$(date +%s%N)
		"$exe" run --dir "$BENCH_DIR/runs/$bin-$r" "$BENCH_DIR/chain-2.yaml" >/dev/null
		e=$(date +%s%N)
		times[$bin]+="$(((e - s) / 1000)) "
		rm -f "$BENCH_DIR/runs/written"
	done
done
for bin in "${bins[@]}"; do
	printf '%-5s cold 3-node run after %d MB written: median %6d µs   runs: %s\n' "$bin" "$mb" "$(median "${times[$bin]}")" "${times[$bin]}"
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
