package shell

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slowWriter takes a while over each write: a blob on a loaded disk, or a
// copy the machine's load keeps waiting.
type slowWriter struct {
	bytes.Buffer
	delay time.Duration
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay) // the slowness under test, not a wait for something
	return w.Buffer.Write(p)
}

// TestDrainReadsWhatAnExitedCommandWrote: what a command wrote before it
// exited is read to the end, however many pipe waits its copy takes, even
// while a process it left behind holds the pipe open; once the pipe is
// empty and idle for a wait, it is closed and drain returns.
func TestDrainReadsWhatAnExitedCommandWrote(t *testing.T) {
	const wait = time.Millisecond
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()                                  // held by "a process left behind" until the test ends
	data := bytes.Repeat([]byte("0123456789"), 4000) // 40,000 bytes: more than one read
	n, err := w.Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)

	out := &slowWriter{delay: 20 * wait}
	drain(wait, copyPipe(r, out))
	require.Equal(t, len(data), out.Len(), "every byte written before the exit is kept")
	require.Equal(t, data, out.Bytes())
}
