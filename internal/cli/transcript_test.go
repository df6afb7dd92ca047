package cli_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// The console transcripts of README.md and docs/*.md are run by
// TestTranscripts and must print what they show. A transcript is a fenced
// block marked ```console: lines that begin with "$ " are commands (a
// line ending in \ goes on with the next), the lines after one are what it
// prints, stdout and stderr together.
//
// Each block runs in a folder of its own that stands for the repository's
// root: it holds a copy of examples/ (the tour's own files are in
// examples/tour/), and nothing else. It runs in one bash, so variables and
// `echo $?` work as in a terminal. The skein that `make install` builds
// from this tree is first on PATH; the environment has NO_COLOR=1,
// TERM=dumb and SKEIN_LLM_BASE_URL (no SKEIN_LLM_MODEL) pointing at a
// scripted model whose one answer is the repair of examples/tour/greet.yaml
// (testdata/greet.repaired.yaml). A `skein serve` command runs in the
// background until the block ends (on a free port, shown as 7420): what it
// shows is what it has printed before the next command runs.
// serveDirective before a block starts a server for it.
//
// Comparing, run ids (12 hex digits) stand for whatever id the run got —
// the same id in the block is the same run, two ids are two runs, and a
// command that names one is given the real one —, dates, times, durations and process ids (pid
// N) match any, this machine's name where a step ran is laptop, runs of
// spaces count as one, the block's folder is left out of paths, and …
// matches anything: inside a line, any text; alone on a line, any number
// of lines. Examples that need what the folder does not hold (a model that
// chats, a signed webhook, a Postgres server) are marked ```text.
//
// go test ./internal/cli -run TestTranscripts -update replaces what a
// failing command shows with what it printed (… included: check the diff).

// transcript is one ```console block.
type transcript struct {
	file  string
	line  int
	steps []step
	// serve: the block follows on from a skein serve started in an earlier
	// one (the line before it is serveDirective).
	serve bool
}

// serveDirective, on the line before a console block, starts skein serve
// --workflows examples in the block's folder before its commands, and sets
// TOKEN to the server's admin token: the block goes on from an earlier one
// that started the server. It is an HTML comment: Markdown does not show it.
const serveDirective = "<!-- transcript: skein serve runs, $TOKEN is its admin token -->"

// step is a command and what it prints.
type step struct {
	line    int // of the command's first line
	last    int // of the command's last line
	command string
	want    []string
}

// rewrites are the outputs -update puts in place of shown ones, by file.
type rewrites struct {
	mu sync.Mutex
	m  map[string][]rewrite
}

type rewrite struct {
	after, n int // the output shown is n lines after line after
	lines    []string
}

func (r *rewrites) add(file string, rw rewrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[file] = append(r.m[file], rw)
}

// apply rewrites the files, from their last change to their first.
func (r *rewrites) apply(t *testing.T) {
	for file, rws := range r.m {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		lines := strings.Split(string(data), "\n")
		sort.Slice(rws, func(i, j int) bool { return rws[i].after > rws[j].after })
		for _, rw := range rws {
			lines = slices.Replace(lines, rw.after, rw.after+rw.n, rw.lines...)
		}
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644))
	}
}

// transcripts reads the console blocks of a Markdown file.
func transcripts(t *testing.T, path string) []transcript {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []transcript
	var cur *transcript
	var cont bool // the last command line ended in a backslash
	var before string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		prev := before
		before = strings.TrimSpace(line)
		switch {
		case cur == nil && strings.TrimSpace(line) == "```console":
			cur = &transcript{file: path, line: n, serve: prev == serveDirective}
		case cur == nil:
		case strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cont:
			s := &cur.steps[len(cur.steps)-1]
			s.command += "\n" + line
			s.last = n
			cont = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			cur.steps = append(cur.steps, step{line: n, last: n, command: strings.TrimPrefix(line, "$ ")})
			cont = strings.HasSuffix(line, `\`)
		default:
			require.NotEmpty(t, cur.steps, "%s:%d: a console block begins with a $ command", path, n)
			s := &cur.steps[len(cur.steps)-1]
			s.want = append(s.want, line)
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a console block is not closed", path)
	return out
}

var (
	runIDRe    = regexp.MustCompile(`(^|[^0-9A-Za-z])([0-9a-f]{12})([^0-9A-Za-z]|$)`)
	dateTimeRe = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[ _T]\d{2}[:-]\d{2}[:-]\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`)
	durationRe = regexp.MustCompile(`<?\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`)
	spacesRe   = regexp.MustCompile(`[ \t]+`)
	pidRe      = regexp.MustCompile(`\bpid \d+\b`)
)

// normalizeLine makes a line comparable: ids, times and durations replaced,
// spaces collapsed.
func normalizeLine(s string) string {
	s = replaceIDs(s, func(string) string { return "<ID>" })
	s = dateTimeRe.ReplaceAllString(s, "<TIME>")
	s = durationRe.ReplaceAllString(s, "<DUR>")
	s = pidRe.ReplaceAllString(s, "pid <PID>")
	return strings.TrimRight(spacesRe.ReplaceAllString(s, " "), " ")
}

// replaceIDs replaces the run ids in s.
func replaceIDs(s string, f func(id string) string) string {
	for range 2 { // ids one character apart share it: a second pass
		s = runIDRe.ReplaceAllStringFunc(s, func(m string) string {
			sm := runIDRe.FindStringSubmatch(m)
			return sm[1] + f(sm[2]) + sm[3]
		})
	}
	return s
}

// findIDs returns the run ids in s, in order.
func findIDs(s string) []string {
	var ids []string
	replaceIDs(s, func(id string) string { ids = append(ids, id); return "<ID>" })
	return ids
}

// lineMatches reports whether a printed line matches a shown one, in
// which … stands for any text.
func lineMatches(want, got string) bool {
	w, g := normalizeLine(want), normalizeLine(got)
	if !strings.Contains(w, "…") {
		return w == g
	}
	parts := strings.Split(w, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(g)
}

// match matches printed lines against shown ones; a shown line that is
// only … matches any number of lines. It returns the pairs of lines
// matched, for the run ids they hold.
func match(want, got []string) ([][2]string, bool) {
	if len(want) == 0 {
		return nil, len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for skip := 0; skip <= len(got); skip++ {
			if pairs, ok := match(want[1:], got[skip:]); ok {
				return pairs, true
			}
		}
		return nil, false
	}
	if len(got) == 0 || !lineMatches(want[0], got[0]) {
		return nil, false
	}
	pairs, ok := match(want[1:], got[1:])
	return append([][2]string{{want[0], got[0]}}, pairs...), ok
}

// shownLines is what printed lines look like in a transcript: paths
// relative to the block's folder, the server on its usual port, this
// machine's name where a step ran (host pid N) as laptop.
func shownLines(lines []string, dir, port string) []string {
	out := make([]string, len(lines))
	host, _ := os.Hostname()
	for i, l := range lines {
		l = strings.ReplaceAll(l, dir+string(filepath.Separator), "")
		if host != "" {
			l = strings.ReplaceAll(l, " "+host+" pid ", " laptop pid ")
		}
		out[i] = strings.ReplaceAll(l, "127.0.0.1:"+port, "127.0.0.1:7420")
	}
	return out
}

// freePort returns a TCP port of the loopback interface that was free.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	return port
}

// shell is one bash that runs a block's commands in turn, so variables
// and the exit code of one are there for the next, as in a terminal.
type shell struct {
	in  io.WriteCloser
	out *bufio.Reader
}

// endMark ends what a command printed, followed by its exit code.
const endMark = "\x00skein-transcript-end "

func startShell(t *testing.T, dir string, environ []string) *shell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = dir, environ
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = pw, pw
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	pw.Close()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
		pr.Close()
	})
	return &shell{in: in, out: bufio.NewReader(pr)}
}

// run runs command and returns what it printed and its exit code.
func (s *shell) run(t *testing.T, command string) (string, int) {
	t.Helper()
	script := fmt.Sprintf("{ %s\n} </dev/null\n__s=$?; printf '%%b%%d\\n' '%s' $__s; (exit $__s)\n", command, strings.ReplaceAll(endMark, "\x00", "\\0"))
	_, err := io.WriteString(s.in, script)
	require.NoError(t, err)
	var out strings.Builder
	for {
		line, err := s.out.ReadString('\n')
		require.NoError(t, err, "the shell ended while running %q; it printed %q", command, out.String()+line)
		if i := strings.Index(line, endMark); i >= 0 {
			out.WriteString(line[:i])
			code, err := strconv.Atoi(strings.TrimSpace(line[i+len(endMark):]))
			require.NoError(t, err)
			return out.String(), code
		}
		out.WriteString(line)
	}
}

// startServer starts a command that serves until the test ends (it is
// sent SIGTERM then) and returns the lines it printed once ready says
// they are all that was to be shown, or after 30 seconds.
func startServer(t *testing.T, dir string, environ []string, command string, ready func([]string) bool) []string {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+command)
	cmd.Dir, cmd.Env = dir, environ
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	pw.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		for range lines { // what it prints as it stops
		}
		_ = cmd.Wait()
		pr.Close()
	})
	var got []string
	deadline := time.After(30 * time.Second)
	for !ready(got) {
		select {
		case l, ok := <-lines:
			if !ok {
				return got
			}
			got = append(got, l)
		case <-deadline:
			return got
		}
	}
	return got
}

// buildSkein builds the skein binary of this tree as README's set-up
// does, with make install (into GOBIN, here a folder of the test), and
// returns the folder.
func buildSkein(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	// internal/ociimage's TestImage builds the same static skein: one
	// build at a time, so that the second finds the first's packages in
	// the build cache instead of compiling them beside it.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "skein-static-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	cmd := exec.Command("make", "-C", "../..", "install")
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make install: %s", out)
	_, err = os.Stat(filepath.Join(bin, "skein"))
	require.NoError(t, err, "make install put no skein in GOBIN: %s", out)
	if runtime.GOOS == "linux" {
		// Static, as the Makefile says: no dynamic loader to run at start.
		f, err := elf.Open(filepath.Join(bin, "skein"))
		require.NoError(t, err)
		defer f.Close()
		for _, p := range f.Progs {
			require.NotEqual(t, elf.PT_INTERP, p.Type, "make install built a dynamically linked skein")
		}
	}
	return bin
}

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	require.NoError(t, err)
}

func TestTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds skein")
	}
	t.Parallel()
	files := []string{"../../README.md"}
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append(files, docs...)
	var all []transcript
	for _, f := range files {
		all = append(all, transcripts(t, f)...)
	}
	require.NotEmpty(t, all)
	bin := buildSkein(t)
	rw := &rewrites{m: map[string][]rewrite{}}
	if *update {
		t.Cleanup(func() { rw.apply(t) })
	}
	for _, tr := range all {
		name := fmt.Sprintf("%s:%d", strings.TrimPrefix(tr.file, "../../"), tr.line)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyTree(t, "../../examples", filepath.Join(dir, "examples"))
			fix, err := os.ReadFile("testdata/greet.repaired.yaml")
			require.NoError(t, err)
			model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{repaired(string(fix), "greet read fetch.json.nme; fetch prints name")})
			environ := []string{
				"PATH=" + bin + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
				"HOME=" + dir, "NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8", "TZ=UTC",
				"SKEIN_LLM_BASE_URL=" + model.BaseURL(), "SKEIN_LLM_API_KEY=fake-key",
			}
			port := freePort(t)
			sh := startShell(t, dir, environ)
			if tr.serve {
				got := startServer(t, dir, environ, "skein serve --addr 127.0.0.1:"+port+" --workflows examples", func(lines []string) bool {
					return len(lines) > 0 && strings.Contains(lines[len(lines)-1], `"msg":"listening"`)
				})
				require.NotEmpty(t, got)
				require.Contains(t, got[len(got)-1], `"msg":"listening"`, "skein serve did not start: %s", strings.Join(got, "\n"))
				out, code := sh.run(t, "TOKEN=$(cat .skein/admin.token)")
				require.Equal(t, 0, code, out)
			}
			ids := map[string]string{}     // id shown → id of the run here
			shownAs := map[string]string{} // id of the run here → id shown
			for _, s := range tr.steps {
				command := replaceIDs(s.command, func(id string) string {
					if real, ok := ids[id]; ok {
						return real
					}
					return id
				})
				command = strings.ReplaceAll(command, "127.0.0.1:7420", "127.0.0.1:"+port)
				var printed string
				var got []string
				code := 0
				if strings.HasPrefix(command, "skein serve") {
					// A server runs on while the block goes on: what it
					// shows is what it has printed by then.
					command = "skein serve --addr 127.0.0.1:" + port + strings.TrimPrefix(command, "skein serve")
					got = startServer(t, dir, environ, command, func(lines []string) bool {
						_, ok := match(append(s.want, "…"), shownLines(lines, dir, port))
						return ok
					})
					got = shownLines(got, dir, port)
					printed = strings.Join(got, "\n")
				} else {
					var out string
					out, code = sh.run(t, command)
					got = shownLines(strings.Split(strings.TrimSuffix(out, "\n"), "\n"), dir, port)
					if out == "" {
						got = nil
					}
					printed = strings.Join(got, "\n")
				}
				want := s.want
				if strings.HasPrefix(command, "skein serve") {
					want = append(want, "…")
				}
				pairs, ok := match(want, got)
				if !ok && *update {
					rw.add(tr.file, rewrite{after: s.last, n: len(s.want), lines: got})
					continue
				}
				if !ok {
					t.Fatalf("%s:%d: $ %s\nshown:\n%s\nprinted (exit %d):\n%s", tr.file, s.line, s.command,
						strings.Join(s.want, "\n"), code, printed)
				}
				for _, p := range pairs {
					shown, real := findIDs(p[0]), findIDs(p[1])
					for i := 0; i < len(shown) && i < len(real); i++ {
						if _, ok := ids[shown[i]]; !ok {
							ids[shown[i]] = real[i]
						}
						if other, ok := shownAs[real[i]]; ok && other != shown[i] {
							t.Fatalf("%s:%d: $ %s\nthe block shows one run as %s and as %s: use one id", tr.file, s.line, s.command, other, shown[i])
						}
						shownAs[real[i]] = shown[i]
					}
				}
			}
		})
	}
}
