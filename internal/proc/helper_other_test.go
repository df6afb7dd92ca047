//go:build !unix

package proc_test

import "os"

func runHelper() { os.Exit(2) }
