package mcp_test

import (
	"fmt"

	"github.com/skeinhq/skein/internal/mcp"
)

// An operator's allowlist, as skein serve will set it: the pool asks it
// with the absolute path of the program a server would run.
func ExampleAllowList() {
	pool := mcp.NewPool(nil, nil)
	pool.Allow = mcp.AllowList("/usr/local/bin/mcp-server-filesystem")

	fmt.Println(pool.Allow("/usr/local/bin/mcp-server-filesystem"))
	fmt.Println(pool.Allow("/tmp/downloaded/mcp-server-filesystem"))
	// Output:
	// <nil>
	// it is not on the allowlist (/usr/local/bin/mcp-server-filesystem)
}
