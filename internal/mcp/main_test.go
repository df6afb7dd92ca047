package mcp_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a pool starts (starts, closes, process waits, the SDK's
// readers) ends with Close.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	goleak.VerifyTestMain(m)
}
