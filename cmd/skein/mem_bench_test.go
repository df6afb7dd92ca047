package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The memory benchmarks run `skein run` as a process on workflows whose
// nodes each print 10 MiB (7.5 MiB of random bytes in base64, so no two
// outputs are alike) and report the process's peak resident memory, read
// from its rusage, and the size of its .skein folder (database, WAL and
// run folder) once it is done. Run them with scripts/bench-mem.sh, or
//
//	go test -run '^$' -bench Memory -benchtime 1x ./cmd/skein
//
// SKEIN_BIN=path measures another binary (an older commit); BENCH_DIR
// puts the .skein folders there instead of a temporary folder.

// tenMiB prints 10 MiB of text that differs every time.
const tenMiB = `head -c 7864320 /dev/urandom | base64 -w0`

// parallel16 is a trigger and 16 shell nodes after it, run at once.
func parallel16() string {
	var b strings.Builder
	b.WriteString("version: 1\nname: parallel16\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  - {id: n%d, type: shell, shell: true, command: %q}\n", i, tenMiB)
	}
	b.WriteString("edges:\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  - {from: start, to: n%d}\n", i)
	}
	return b.String()
}

// foreach30 is a foreach over 30 items whose body prints 10 MiB, and a
// node after it that reads the list of results.
func foreach30() string {
	return `version: 1
name: foreach30
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..30 }}"}
  - {id: item, type: shell, shell: true, command: "` + tenMiB + `"}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: set, values: {n: "{{ len(each.items) }}", first: "{{ len(each.items[0].stdout) }}"}}
edges:
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
`
}

func BenchmarkMemoryParallel16(b *testing.B) { benchMemory(b, "parallel16", parallel16(), 300, 0) }
func BenchmarkMemoryForEach30(b *testing.B)  { benchMemory(b, "foreach30", foreach30(), 400, 350) }

// benchMemory runs the workflow src b.N times and reports the largest peak
// RSS and .skein size of the runs, in MB (10^6 bytes), with their ratios
// to the targets (0: none).
func benchMemory(b *testing.B, name, src string, rssTarget, diskTarget float64) {
	skein := bin
	if s := os.Getenv("SKEIN_BIN"); s != "" {
		skein = s
	}
	root := b.TempDir()
	if d := os.Getenv("BENCH_DIR"); d != "" {
		var err error
		if root, err = os.MkdirTemp(d, "bench-mem-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(root) })
	}
	flow := filepath.Join(root, name+".yaml")
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	var rss, disk float64
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(root, fmt.Sprintf("run-%d", i))
		cmd := exec.Command(skein, "run", "--dir", dir, flow)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("skein run %s: %v\n%s", name, err, tail(out))
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		rss = max(rss, float64(ru.Maxrss)*1024/1e6) // Maxrss is in KiB on Linux
		disk = max(disk, float64(diskUsage(b, dir))/1e6)
		os.RemoveAll(dir)
	}
	b.ReportMetric(rss, "MB-maxRSS")
	b.ReportMetric(disk, "MB-disk")
	b.ReportMetric(rss/rssTarget, "RSS/target")
	if diskTarget > 0 {
		b.ReportMetric(disk/diskTarget, "disk/target")
	}
}

// diskUsage is the space the files under dir take, as du counts it.
func diskUsage(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func tail(out []byte) string {
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return string(out)
}
