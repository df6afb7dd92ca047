#!/usr/bin/env bash
# bench-mem.sh — peak memory and disk of `skein run` on big outputs.
#
#   scripts/bench-mem.sh [runs]            (default 3 runs of each)
#
# Runs BenchmarkMemoryParallel16 and BenchmarkMemoryForEach30
# (cmd/skein/mem_bench_test.go): `skein run` as a process on
#   parallel16  16 shell nodes at once, each printing 10 MiB
#   foreach30   a foreach over 30 items whose body prints 10 MiB, and a node
#               reading the list of results
# and prints, for each, the largest peak RSS of the process (its rusage's
# ru_maxrss) and the largest size of its .skein folder (database, WAL and
# run folder, as du counts it) over the runs, in MB (10^6 bytes), with the
# ratios to the targets (RSS ≤ 300 MB and ≤ 400 MB; disk ≤ 350 MB).
#
# Environment: SKEIN=path measures that binary instead of one built from
# this tree (e.g. an older commit's); BENCH_DIR (default ./tmp/bench-mem,
# on the project's disk) holds the runs' folders.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/benchlib.sh"
export BENCH_DIR=${BENCH_DIR:-$root/tmp/bench-mem}
mkdir -p "$BENCH_DIR"
if [[ -n ${SKEIN:-} ]]; then
	export SKEIN_BIN=$(cd "$(dirname "$SKEIN")" && pwd)/$(basename "$SKEIN")
fi
echo "# $(df -T "$BENCH_DIR" | awk 'NR==2 {print $2" on "$7}'), $(nproc) CPUs, $runs runs, $(cd "$root" && git rev-parse --short HEAD)${SKEIN:+, binary $SKEIN}"
echo "# $(machine_state)"
cd "$root"
go test -run '^$' -bench 'Memory' -benchtime "${runs}x" -timeout 30m ./cmd/skein |
	awk '/^Benchmark/ {
		name = $1; sub(/^BenchmarkMemory/, "", name); sub(/-[0-9]+$/, "", name)
		printf "%-11s %5.1f s a run", name, $3 / 1e9
		for (i = 5; i < NF; i += 2) printf "   %s %s", $(i + 1), $i
		print ""
	}'
