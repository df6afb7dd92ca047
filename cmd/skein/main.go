// Command skein runs, validates and inspects Skein workflows.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/skeinhq/skein/internal/cli"
	_ "github.com/skeinhq/skein/internal/nodes/standard"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
