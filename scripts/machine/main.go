// Command machine prints the state of this machine that moves every
// benchmark figure (benchproc.State): what the first write to a page of
// fresh memory costs, how long a fixed loop takes on one core, what a
// system call costs and what a random load within 4 and 32 MiB costs. The
// benchmark scripts print it beside their load.
//
//	go run ./scripts/machine
package main

import (
	"fmt"
	"os"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func main() {
	line, err := benchproc.State()
	if err != nil {
		fmt.Fprintln(os.Stderr, "machine:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}
