// Command machine prints the state of this machine that moves every
// benchmark figure: what the first write to a page of fresh memory costs
// (benchproc.PageTouch over 64 MiB) and how long a fixed loop of 10^8
// multiply-adds takes on one core (benchproc.Spin), each the median of
// three. The benchmark scripts print it beside their load.
//
//	go run ./scripts/machine
package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func main() {
	var touch, spin []time.Duration
	for range 3 {
		t, err := benchproc.PageTouch(64 << 20)
		if err != nil {
			fmt.Fprintln(os.Stderr, "machine:", err)
			os.Exit(1)
		}
		touch = append(touch, t)
		spin = append(spin, benchproc.Spin(1e8))
	}
	slices.Sort(touch)
	slices.Sort(spin)
	fmt.Printf("a first write to a %d KiB page %.1f µs; 10^8 multiply-adds on one core %.0f ms\n",
		os.Getpagesize()/1024, float64(touch[1].Nanoseconds())/1e3, float64(spin[1].Nanoseconds())/1e6)
}
