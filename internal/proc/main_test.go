package proc_test

import (
	"os"
	"testing"
)

// helperEnv, when set, makes the test binary a helper process (see
// runHelper) instead of running the tests.
const helperEnv = "SKEIN_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	os.Exit(m.Run())
}
