// Command pagecost prints what the first write to a page of fresh memory
// costs on this machine (benchproc.PageTouch over 64 MiB, the median of
// three): the benchmark scripts print it beside their load, since the
// figures of every process start move with it.
//
//	go run ./scripts/pagecost
package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func main() {
	var d []time.Duration
	for range 3 {
		t, err := benchproc.PageTouch(64 << 20)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pagecost:", err)
			os.Exit(1)
		}
		d = append(d, t)
	}
	slices.Sort(d)
	fmt.Printf("a first write to a %d KiB page %.1f µs\n", os.Getpagesize()/1024, float64(d[1].Nanoseconds())/1e3)
}
