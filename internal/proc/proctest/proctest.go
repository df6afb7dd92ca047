// Package proctest finds the processes a test started, whatever became of
// their parents: each carries a marker in its environment.
package proctest

import (
	"bytes"
	"os"
	"strconv"

	"github.com/skeinhq/skein/internal/proc"
)

// Survivors lists the living processes (zombies are dead) whose
// environment holds name=value: every process of the tree a test tagged,
// whatever its group or session. Where /proc is not mounted it finds none.
func Survivors(name, value string) []int {
	want := []byte(name + "=" + value)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) && proc.Alive(pid) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
