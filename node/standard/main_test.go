package standard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the suite starts (fake servers, MCP sessions, commands)
// ends with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
