// Package ociimage builds Skein's container image without a container
// daemon: the static skein binary on an empty base (scratch), run as a
// non-root user, with skein serve as what it runs, written as an OCI image
// layout in a tar file (make image). It uses go-containerregistry.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout: where the binary, the data folder and the workflows
// folder are, who runs it and on which port it listens.
const (
	Binary    = "/skein"
	DataDir   = "/data"      // the working folder; --dir is /data/.skein
	Workflows = "/workflows" // --workflows: mount the workflow files here
	CACerts   = "/etc/ssl/certs/ca-certificates.crt"
	User      = "65532:65532" // nonroot, as in distroless images
	Port      = "7420"
	uid, gid  = 65532, 65532
)

// Entrypoint and Cmd are the image's: skein serve on every interface of
// the container (an API token is needed, --no-auth is loopback only); a
// command given to the container replaces Cmd, e.g. worker --db ….
var (
	Entrypoint = []string{Binary}
	Cmd        = []string{"serve", "--addr", "0.0.0.0:" + Port, "--dir", DataDir + "/.skein", "--workflows", Workflows}
)

// Options say what goes in the image.
type Options struct {
	// Binary is the skein binary to put in: a static Linux build
	// (CGO_ENABLED=0).
	Binary string
	// Arch is the binary's GOARCH (amd64, arm64…).
	Arch string
	// Version labels the image (org.opencontainers.image.version).
	Version string
	// CACerts, when not empty, is a PEM bundle of certificate authorities
	// copied to /etc/ssl/certs/ca-certificates.crt, so that nodes can call
	// HTTPS services; scratch has none.
	CACerts string
}

// epoch is every file's and the image's time, so that the same binary
// makes the same image.
var epoch = time.Unix(0, 0).UTC()

// Build makes the image.
func Build(o Options) (v1.Image, error) {
	if o.Arch == "" {
		return nil, errors.New("ociimage: the binary's architecture (GOARCH) is not given")
	}
	files, err := rootfs(o)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("ociimage: the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: epoch}, CreatedBy: "skein make image", Comment: "the skein binary",
	}})
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		User:         User,
		Entrypoint:   Entrypoint,
		Cmd:          Cmd,
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{Port + "/tcp": {}},
		Env:          []string{"HOME=" + DataDir},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "skein",
			"org.opencontainers.image.description": "Skein's workflow engine: skein serve (the probes are GET /healthz and GET /readyz on port " + Port + ")",
			"org.opencontainers.image.source":      "https://github.com/skeinhq/skein",
			"org.opencontainers.image.version":     o.Version,
		},
	}
	if o.CACerts != "" {
		cf.Config.Env = append(cf.Config.Env, "SSL_CERT_FILE="+CACerts)
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the image's one layer: the binary, the data and workflows
// folders (owned by the user, so the server starts without volumes), /tmp,
// and the CA bundle when given.
func rootfs(o Options) ([]byte, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("ociimage: the binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("data", 0o755, uid) },
		func() error { return dir("workflows", 0o755, uid) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return file("skein", 0o755, bin) },
	}
	if o.CACerts != "" {
		certs, err := os.ReadFile(o.CACerts)
		if err != nil {
			return nil, fmt.Errorf("ociimage: the CA certificates: %w", err)
		}
		steps = append(steps,
			func() error { return dir("etc", 0o755, 0) },
			func() error { return dir("etc/ssl", 0o755, 0) },
			func() error { return dir("etc/ssl/certs", 0o755, 0) },
			func() error { return file(CACerts[1:], 0o644, certs) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("ociimage: the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("ociimage: the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteLayoutTar writes img, named ref (e.g. skein:v1.2.3), as an OCI
// image layout in the tar file path — what podman load, skopeo copy
// oci-archive:… and docker load (25 and later) read.
func WriteLayoutTar(path string, img v1.Image, ref string) error {
	tmp, err := os.MkdirTemp("", "skein-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tmp {
			return err
		}
		rel, err := filepath.Rel(tmp, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: epoch})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ociimage: writing %s: %w", path, err)
	}
	return nil
}
