package ociimage_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/ociimage"
)

// buildStatic builds skein static as make image does: CGO_ENABLED=0, for
// Linux — with make install, which builds it so (without make image's
// -trimpath and -s -w, which would rebuild every package instead of using
// the build cache).
func buildStatic(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on Linux")
	}
	gobin := t.TempDir()
	// internal/cli's TestTranscripts runs make install too: one build at a
	// time, so that the second finds the first's packages in the build
	// cache instead of compiling them beside it.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "skein-static-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	cmd := exec.Command("make", "-C", "../..", "install")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return filepath.Join(gobin, "skein")
}

// unpacked is an OCI layout tar file read back: its files by name.
type unpacked map[string][]byte

func readTar(t *testing.T, r io.Reader) (unpacked, map[string]*tar.Header) {
	t.Helper()
	files, headers := unpacked{}, map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, headers
		}
		require.NoError(t, err)
		headers[h.Name] = h
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = data
	}
}

// blob reads a blob of the layout by its descriptor's digest, checking it.
func (u unpacked) blob(t *testing.T, digest string) []byte {
	t.Helper()
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	require.True(t, ok, digest)
	data, ok := u["blobs/sha256/"+hexd]
	require.True(t, ok, "the layout holds blob %s", digest)
	sum := sha256.Sum256(data)
	require.Equal(t, hexd, hex.EncodeToString(sum[:]), "the blob is what its digest says")
	return data
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
}

// TestImage builds the image as make image does, unpacks the OCI layout,
// checks its configuration and runs the binary from its layer: skein
// version, then skein serve with the image's arguments, answering its
// probes without a token.
func TestImage(t *testing.T) {
	t.Parallel()
	bin := buildStatic(t)
	certs := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644))
	img, err := ociimage.Build(ociimage.Options{Binary: bin, Arch: runtime.GOARCH, Version: "v0.0.0-test", CACerts: certs})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "skein-image.tar")
	require.NoError(t, ociimage.WriteLayoutTar(out, img, "skein:test"))

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	layoutFiles, _ := readTar(t, f)
	require.JSONEq(t, `{"imageLayoutVersion": "1.0.0"}`, string(layoutFiles["oci-layout"]))
	var index struct{ Manifests []descriptor }
	require.NoError(t, json.Unmarshal(layoutFiles["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	require.Equal(t, "application/vnd.oci.image.manifest.v1+json", index.Manifests[0].MediaType)
	require.Equal(t, "skein:test", index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])

	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	require.NoError(t, json.Unmarshal(layoutFiles.blob(t, index.Manifests[0].Digest), &manifest))
	require.Equal(t, "application/vnd.oci.image.config.v1+json", manifest.Config.MediaType)
	require.Len(t, manifest.Layers, 1, "scratch and one layer")
	require.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", manifest.Layers[0].MediaType)

	var config struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			WorkingDir   string
			Env          []string
			ExposedPorts map[string]any
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal(layoutFiles.blob(t, manifest.Config.Digest), &config))
	require.Equal(t, "linux", config.OS)
	require.Equal(t, runtime.GOARCH, config.Architecture)
	require.Equal(t, "65532:65532", config.Config.User, "not root")
	require.Equal(t, []string{"/skein"}, config.Config.Entrypoint)
	require.Equal(t, []string{"serve", "--addr", "0.0.0.0:7420", "--dir", "/data/.skein", "--workflows", "/workflows"}, config.Config.Cmd)
	require.Equal(t, "/data", config.Config.WorkingDir)
	require.Contains(t, config.Config.ExposedPorts, "7420/tcp")
	require.Contains(t, config.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")

	zr, err := gzip.NewReader(bytes.NewReader(layoutFiles.blob(t, manifest.Layers[0].Digest)))
	require.NoError(t, err)
	rootfs, headers := readTar(t, zr)
	require.Equal(t, 65532, headers["data/"].Uid, "the data folder is the user's, so serve starts without a volume")
	require.Equal(t, 65532, headers["workflows/"].Uid)
	require.Equal(t, int64(0o755), headers["skein"].Mode)
	require.Contains(t, rootfs, "etc/ssl/certs/ca-certificates.crt")

	// The binary from the layer: static, and it runs.
	root := t.TempDir()
	exe := filepath.Join(root, "skein")
	require.NoError(t, os.WriteFile(exe, rootfs["skein"], 0o755))
	ef, err := elf.Open(exe)
	require.NoError(t, err)
	for _, p := range ef.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is static: scratch has no dynamic loader")
	}
	require.NoError(t, ef.Close())
	v, err := exec.Command(exe, "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(v), "skein "), string(v))

	// skein serve with the image's arguments, its folders in the temp dir
	// and a loopback port instead of 0.0.0.0:7420.
	args := strings.NewReplacer("0.0.0.0:7420", "127.0.0.1:0", "/data", filepath.Join(root, "data"),
		"/workflows", filepath.Join(root, "workflows")).Replace(strings.Join(config.Config.Cmd, "\x00"))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "data"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "workflows"), 0o755))
	serve := exec.Command(exe, strings.Split(args, "\x00")...)
	serve.Dir = filepath.Join(root, "data")
	stderr, err := serve.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, serve.Start())
	var logs strings.Builder
	var addr string
	sc := bufio.NewScanner(stderr)
	for addr == "" && sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "listening" {
			addr, _ = line["addr"].(string)
		}
	}
	require.NotEmpty(t, addr, "skein serve did not listen:\n%s", logs.String())
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		res, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.JSONEq(t, want, string(body), path)
	}
	require.NoError(t, serve.Process.Signal(syscall.SIGTERM))
	require.NoError(t, serve.Wait(), "SIGTERM stops skein serve cleanly")
	_, err = os.Stat(filepath.Join(root, "data", ".skein", "admin.token"))
	require.NoError(t, err, "the admin token is written to --dir")
}
