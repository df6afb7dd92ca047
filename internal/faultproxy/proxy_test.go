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

// serve serves each connection with handle until the test ends.
func serve(t *testing.T, handle func(net.Conn)) string {
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
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// echo serves lines back to their sender until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	return serve(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
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

// acker answers each line it reads with "ok " and the line, and sends
// the lines it read on the channel it returns.
func acker(t *testing.T) (string, <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	return serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- line
			if _, err := c.Write([]byte("ok " + line)); err != nil {
				return
			}
		}
	}), got
}

// A lost answer: the server gets what the client asked and answers, the
// client hears nothing more and its connection closes; only the first
// such answer is lost, and on the link that asked.
func TestLoseAnswer(t *testing.T) {
	t.Parallel()
	addr, got := acker(t)
	p := faultproxy.New(t, addr)
	lost := p.LoseAnswer([]byte("take"), []byte("ok commit"))

	other, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer other.Close()
	or := bufio.NewReader(other)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)

	ack := func(c net.Conn, r *bufio.Reader, line string) {
		t.Helper()
		_, err := c.Write([]byte(line + "\n"))
		require.NoError(t, err)
		require.Equal(t, line+"\n", <-got)
		answer, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ok "+line+"\n", answer)
	}
	ack(c, r, "begin")
	ack(c, r, "take")        // arms the loss on this link
	ack(other, or, "commit") // the link did not ask
	_, err = c.Write([]byte("commit\n"))
	require.NoError(t, err)
	require.Equal(t, "commit\n", <-got, "the server got what the client asked")
	<-lost
	rest, _ := io.ReadAll(r)
	require.Empty(t, rest, "the client heard nothing of the answer")

	ack(other, or, "commit") // the loss is spent
}
