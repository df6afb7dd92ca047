// Command image builds Skein's OCI image from a static skein binary and
// writes it as an OCI image layout in a tar file (make image):
//
//	go run ./scripts/image -binary bin/linux_amd64/skein -arch amd64 -version v1.2.3 -o skein-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/skeinhq/skein/internal/ociimage"
)

func main() {
	var o ociimage.Options
	var out, ref string
	flag.StringVar(&o.Binary, "binary", "", "the static skein binary (CGO_ENABLED=0 go build ./cmd/skein)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's GOARCH")
	flag.StringVar(&o.Version, "version", "dev", "the image's version label")
	flag.StringVar(&o.CACerts, "ca-certs", "", "a PEM bundle of certificate authorities to include (e.g. /etc/ssl/certs/ca-certificates.crt), for nodes that call HTTPS")
	flag.StringVar(&out, "o", "skein-image.tar", "the OCI layout tar file to write")
	flag.StringVar(&ref, "ref", "", "the image's name in the layout (default skein:<version>)")
	flag.Parse()
	if o.Binary == "" {
		fmt.Fprintln(os.Stderr, "image: give -binary, the static skein binary")
		os.Exit(2)
	}
	if ref == "" {
		ref = "skein:" + o.Version
	}
	img, err := ociimage.Build(o)
	if err == nil {
		err = ociimage.WriteLayoutTar(out, img, ref)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	d, err := img.Digest()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %s %s (load it with podman load -i %s, or skopeo copy oci-archive:%s docker://REGISTRY/skein:TAG)\n", out, ref, d, out, out)
}
