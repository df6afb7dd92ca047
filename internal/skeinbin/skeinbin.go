// Package skeinbin builds the skein command for tests and benchmarks that
// run it as a process.
package skeinbin

import (
	"fmt"
	"os"
	"os/exec"
)

// Build builds skein's command, from the module that holds the working
// directory, into path: static, as make install builds it (CGO_ENABLED=0:
// the binary users run, which starts faster than one linked to the C
// library). Every test that runs the binary builds it so, and so do the
// Makefile's steps other than the race run: on a machine with an empty
// build cache, skein's packages are then compiled in one configuration
// besides the race detector's, not two.
func Build(path string) error {
	build := exec.Command("go", "build", "-o", path, "github.com/skeinhq/skein/cmd/skein")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}
