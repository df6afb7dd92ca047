package faultproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/faultproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo serves lines back to their sender until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	_, err := c.Write([]byte(line + "\n"))
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, line+"\n", got)
}

// A connection that lives through a cut hears nothing of what it sent
// during it, and is closed when the network comes back; one opened
// during the cut works once it is back.
func TestCutAndRestore(t *testing.T) {
	t.Parallel()
	p := faultproxy.New(t, echo(t))
	live, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer live.Close()
	lr := bufio.NewReader(live)
	roundTrip(t, live, lr, "before")

	p.Cut()
	_, err = live.Write([]byte("lost\n"))
	require.NoError(t, err, "the client is not told of the cut")
	held, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "a new connection is accepted, not refused")
	defer held.Close()
	_, err = held.Write([]byte("held\n"))
	require.NoError(t, err)

	p.Restore()
	got, err := io.ReadAll(lr)
	require.Empty(t, got, "nothing sent during the cut got through: %v", err)
	hr := bufio.NewReader(held)
	line, err := hr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line, "the held connection reaches the server with what it sent")
	roundTrip(t, held, hr, "after")
}
