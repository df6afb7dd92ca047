//go:build unix

package proc_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/skeinhq/skein/internal/proc"
)

// runHelper stands in for Skein: it starts `sleep 30` with the proc rules,
// prints the child's pid and waits until its stdin closes (or it is
// killed).
func runHelper() {
	cmd := exec.Command("sleep", "30")
	proc.Apply(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(cmd.Process.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	os.Exit(0)
}
