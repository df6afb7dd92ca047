package cli_test

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/internal/ociimage"
)

// checkSkeinArgs checks that args — a skein command and its flags, as a
// deployment file passes them — name a command and flags it has, and
// returns the flags' values.
func checkSkeinArgs(t *testing.T, where string, args []string) map[string]string {
	t.Helper()
	require.NotEmpty(t, args, where)
	help := skein(t, args[0], "--help")
	require.Equal(t, 0, help.code, "%s: skein %s: %s", where, args[0], help.stderr)
	flags := map[string]string{}
	for i := 1; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		require.True(t, ok, "%s: skein %s takes flags only, not %q", where, args[0], args[i])
		name, value, inline := strings.Cut(name, "=")
		require.Regexp(t, `(?m)^\s+(-\w, )?--`+regexp.QuoteMeta(name)+`\b`, help.stdout, "%s: skein %s has no --%s", where, args[0], name)
		if !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			value = args[i]
		}
		flags[name] = value
	}
	return flags
}

func seconds(t *testing.T, d string) int {
	t.Helper()
	v, err := time.ParseDuration(d)
	require.NoError(t, err)
	return int(v.Seconds())
}

// TestDeployCompose: deploy/compose.yaml passes skein commands and flags
// that exist, gives each the database, and lets serve and the workers
// stop within their grace.
func TestDeployCompose(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image           string            `yaml:"image"`
			Command         []string          `yaml:"command"`
			Environment     map[string]string `yaml:"environment"`
			StopGracePeriod string            `yaml:"stop_grace_period"`
			Deploy          struct{ Replicas int }
		}
	}
	require.NoError(t, yaml.Unmarshal(data, &compose))
	seen := map[string]bool{}
	for name, svc := range compose.Services {
		if !strings.HasPrefix(svc.Image, "skein:") {
			continue
		}
		flags := checkSkeinArgs(t, "compose "+name, svc.Command)
		seen[svc.Command[0]] = true
		require.Contains(t, svc.Environment["SKEIN_DB"], "postgres://", "compose %s: the database", name)
		switch svc.Command[0] {
		case "serve":
			require.Equal(t, "0.0.0.0:7420", flags["addr"], "serve listens on the container's interfaces")
			require.GreaterOrEqual(t, seconds(t, svc.StopGracePeriod), 10+30, "requests drain for 10 s, then --shutdown-grace (30 s)")
		case "worker":
			require.GreaterOrEqual(t, seconds(t, svc.StopGracePeriod), seconds(t, flags["grace"]), "a worker's --grace fits its stop_grace_period")
			require.Greater(t, svc.Deploy.Replicas, 1, "workers are scaled")
		}
	}
	require.Equal(t, map[string]bool{"migrate": true, "serve": true, "worker": true}, seen)
}

// TestDeployKubernetes: the manifests of deploy/k8s pass skein commands
// and flags that exist, probe /readyz and /healthz, and give each pod the
// time its graceful shutdown takes.
func TestDeployKubernetes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	seen := map[string]bool{}
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		dec := yaml.NewDecoder(f)
		for {
			var doc struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Template struct {
						Spec struct {
							TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
							Containers                    []struct {
								Image          string   `yaml:"image"`
								Args           []string `yaml:"args"`
								Env            []struct{ Name string }
								ReadinessProbe *probe `yaml:"readinessProbe"`
								LivenessProbe  *probe `yaml:"livenessProbe"`
								Ports          []struct {
									Name          string `yaml:"name"`
									ContainerPort int    `yaml:"containerPort"`
								} `yaml:"ports"`
								VolumeMounts []struct {
									MountPath string `yaml:"mountPath"`
									ReadOnly  bool   `yaml:"readOnly"`
								} `yaml:"volumeMounts"`
								SecurityContext struct {
									ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
								} `yaml:"securityContext"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			pod := doc.Spec.Template.Spec
			for _, c := range pod.Containers {
				where := filepath.Base(file) + " " + doc.Kind
				flags := checkSkeinArgs(t, where, c.Args)
				seen[c.Args[0]] = true
				require.Contains(t, c.Env, struct{ Name string }{"SKEIN_DB"}, "%s: the database", where)
				if c.SecurityContext.ReadOnlyRootFilesystem && c.Args[0] != "migrate" {
					// serve and worker make their folder at start: it is
					// on a volume they may write (the image's working
					// folder, ociimage.DataDir, when --dir is not given).
					dir := cmp.Or(flags["dir"], ociimage.DataDir+"/.skein")
					writable := false
					for _, m := range c.VolumeMounts {
						writable = writable || (!m.ReadOnly && (dir == m.MountPath || strings.HasPrefix(dir, m.MountPath+"/")))
					}
					require.True(t, writable, "%s: the root is read-only and %s is on no volume it may write", where, dir)
				}
				switch c.Args[0] {
				case "serve":
					require.NotNil(t, c.ReadinessProbe, where)
					require.NotNil(t, c.LivenessProbe, where)
					require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
					require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
					require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port)
					_, port, _ := strings.Cut(flags["addr"], ":")
					require.Contains(t, c.Ports, struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					}{"http", atoi(t, port)}, "the probes' port is --addr's")
					require.GreaterOrEqual(t, pod.TerminationGracePeriodSeconds, 10+seconds(t, flags["shutdown-grace"]),
						"requests drain for 10 s, then running nodes get --shutdown-grace")
				case "worker":
					require.GreaterOrEqual(t, pod.TerminationGracePeriodSeconds, seconds(t, flags["grace"]), "a worker's --grace fits")
				}
			}
		}
		require.NoError(t, f.Close())
	}
	require.Equal(t, map[string]bool{"migrate": true, "serve": true, "worker": true}, seen)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestDeploySystemdUnit: deploy/skein.service runs skein commands and
// flags that exist, stops within TimeoutStopSec, and its ExecStartPre
// (skein migrate) migrates a new folder's database.
func TestDeploySystemdUnit(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../deploy/skein.service")
	require.NoError(t, err)
	unit := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			unit[k] = v
		}
	}
	pre := strings.Fields(unit["ExecStartPre"])
	start := strings.Fields(unit["ExecStart"])
	require.Equal(t, "/usr/local/bin/skein", pre[0])
	require.Equal(t, "/usr/local/bin/skein", start[0])
	checkSkeinArgs(t, "ExecStartPre", pre[1:])
	flags := checkSkeinArgs(t, "ExecStart", start[1:])
	require.Equal(t, "serve", start[1])
	timeout, err := strconv.Atoi(unit["TimeoutStopSec"])
	require.NoError(t, err)
	require.GreaterOrEqual(t, timeout, 10+seconds(t, flags["shutdown-grace"]))

	// systemd's own check of the unit, where systemd is installed; the
	// binary's path is one that exists here.
	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		self, err := os.Executable()
		require.NoError(t, err)
		copied := filepath.Join(t.TempDir(), "skein.service")
		require.NoError(t, os.WriteFile(copied, bytes.ReplaceAll(data, []byte("/usr/local/bin/skein"), []byte(self)), 0o644))
		out, err := exec.Command(analyze, "verify", copied).CombinedOutput()
		require.NoError(t, err, string(out))
		require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify finds nothing to say")
	}

	dir := filepath.Join(t.TempDir(), ".skein")
	args := append(append([]string(nil), pre[1:]...), "--dir", dir)
	r := skein(t, args...)
	require.Equal(t, 0, r.code, r.stderr)
	_, err = os.Stat(filepath.Join(dir, "skein.db"))
	require.NoError(t, err, "skein migrate made the database")
}
