# benchlib.sh — functions the benchmark scripts share; sourced by
# bench-child.sh, bench-cli.sh, bench-busy.sh, bench-follow.sh, bench-mem.sh,
# bench-queue.sh, bench-slot.sh and bench-trace.sh, not run.

# machine_state — prints what moves every figure on a shared machine:
# what a first write to a page of fresh memory costs, how long a fixed
# loop takes on one core, what a system call costs and what a random load
# within 4 and 32 MiB costs (go run ./scripts/machine; BENCHMARKS.md: the
# machine's quick and slow states). The benchmarks print it beside their
# load.
machine_state() {
	(cd "$(dirname "${BASH_SOURCE[0]}")/.." && go run ./scripts/machine)
}

# skein_binary DIR — puts the binary to time at DIR/skein: a copy of $SKEIN
# when it is set (a binary built elsewhere, e.g. of an older commit), else
# one built from this tree, static as make install builds it.
skein_binary() {
	mkdir -p "$1"
	if [[ -n ${SKEIN:-} ]]; then
		cp "$SKEIN" "$1/skein"
	else
		(cd "$(dirname "${BASH_SOURCE[0]}")/.." && CGO_ENABLED=0 go build -o "$1/skein" ./cmd/skein)
	fi
}

# answer_http PORT MS — starts, in the background ($! is its pid), a local
# HTTP server (python3) that answers every GET on 127.0.0.1:PORT after MS
# milliseconds with a two-byte JSON body, in one write: a reply written in
# two would wait for the client's delayed ACK (40 ms) on a kept-alive
# connection.
answer_http() {
	python3 - "$1" "$2" <<'PY' &
import http.server, socketserver, sys, time
delay = int(sys.argv[2]) / 1000
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if delay:
            time.sleep(delay)
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
}

# chain N DIR — writes DIR/chain-N.yaml: a trigger and N `set` nodes in a
# row.
chain() {
	local i
	{
		printf 'version: 1\nname: chain\nnodes:\n  - {id: start, type: trigger.manual}\n'
		for ((i = 0; i < $1; i++)); do printf '  - {id: n%d, type: set, values: {i: %d}}\n' "$i" "$i"; done
		printf 'edges:\n  - {from: start, to: n0}\n'
		for ((i = 1; i < $1; i++)); do printf '  - {from: n%d, to: n%d}\n' $((i - 1)) "$i"; done
	} >"$2/chain-$1.yaml"
}

# foreach N DIR — writes DIR/foreach-N.yaml: a foreach over inputs.n
# items (default N), one `set` an item, then a `set` that counts them.
foreach() {
	cat >"$2/foreach-$1.yaml" <<YAML
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

# median "T1 T2 …" — the median of whole numbers (of the middle two, their
# mean rounded down).
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }

# recorded_us URL SCHEMA — prints the recorded time, in µs, of the run
# started last in the Postgres database at URL under SCHEMA: finished_at −
# started_at, as the workers wrote them. A queued run's `skein run` sees
# the end only at its next look at the run (every 100 ms), so its own wall
# time moves in steps of ~100 ms.
recorded_us() {
	psql -tAq "$1" -c "SELECT (EXTRACT(EPOCH FROM finished_at - started_at) * 1000000)::bigint
		FROM $2.runs ORDER BY started_at DESC LIMIT 1"
}

# timed ERRFILE CMD... — runs CMD, its output discarded and its standard
# error written to ERRFILE, and prints its wall time and the CPU time it
# spent (user + system, the child's getrusage), in µs: "WALL CPU". The CPU
# time moves less than the wall time with the load of a shared machine.
# Fails when CMD does.
timed() {
	python3 -c 'import os, sys, time
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ, file_actions=[
    (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
    (os.POSIX_SPAWN_OPEN, 2, sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - t
sys.exit(1) if status else print(int(wall * 1e6), int((usage.ru_utime + usage.ru_stime) * 1e6))' "$@"
}

# minor_faults CMD... — runs CMD, its output discarded, and prints the minor
# page faults it made (the child's getrusage, through python3). A figure of
# what a process touches, steadier than its time on a machine whose page
# faults cost 10-25 µs each: it moves only when the code does.
minor_faults() {
	# posix_spawn, not fork: a forked python's own page faults would count.
	python3 -c 'import os, sys
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ,
    file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
sys.exit(f"{sys.argv[1]} failed") if status else print(usage.ru_minflt)' "$@"
}
