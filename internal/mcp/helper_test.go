package mcp_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/workflow"
)

// helperEnv, when set to the node program, makes the test binary a helper
// process (see runHelper) instead of running the tests; faultyEnv is the
// path of faulty.js.
const (
	helperEnv = "SKEIN_MCP_TEST_HELPER"
	faultyEnv = "SKEIN_MCP_TEST_FAULTY"
)

// runHelper stands in for Skein: it starts the faulty server, which keeps
// running when its stdin closes, as the child of a shell (the server is
// the shell; the faulty program its grandchild) through a pool, prints the
// shell's pid, and waits until its own stdin closes (or it is killed).
func runHelper() {
	// Its stderr goes to /dev/null: a write to the pipe of a dead Skein
	// would make it exit on its own. A job sh starts with & reads
	// /dev/null unless told otherwise: fd 3 hands it the pool's pipe.
	srv := &workflow.MCPServer{Name: "faulty", Command: "sh",
		Args: []string{"-c", `exec 3<&0; "$0" "$1" --ignore-stdin-close <&3 3<&- 2>/dev/null & wait`, os.Getenv(helperEnv), os.Getenv(faultyEnv)},
		Env:  map[string]string{markerVar: os.Getenv(markerVar)}}
	pool := mcp.NewPool([]*workflow.MCPServer{srv}, mcp.Scope(nil, nil))
	if _, err := pool.Tools(context.Background(), "faulty"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(mcp.ServerPID(pool, "faulty"))
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = pool.Close()
	os.Exit(0)
}
