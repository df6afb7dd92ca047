// Package faultproxy is a TCP proxy for fault tests: it forwards
// connections from a loopback port to a server, and can cut the network
// between them as a failed link or switch does, then restore it.
//
// While the network is cut, nothing gets through and nothing is refused:
// the bytes the client or the server send on a live connection are lost
// (neither side hears of it: no reset, no close), and a new connection is
// accepted but not carried to the server. When the network comes back,
// the connections that lived through the cut are closed (their state is
// gone, as a restarted NAT or firewall forgets it: the next packet either
// side sends is answered with a reset), and the connections that were
// held are carried to the server and work.
//
// It can also lose one answer (LoseAnswer): the server does what a
// client asked, and the connection breaks before the client hears it.
//
// It is a test helper: it listens on 127.0.0.1 only.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections from Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   chan struct{} // closed by Restore; nil while the network is up
	links map[*link]struct{}
	lose  *lose // nil: no answer is to be lost
	wg    sync.WaitGroup
}

// lose is an answer LoseAnswer is to lose.
type lose struct {
	ask, answer []byte
	on          *link         // the link that asked; nil until one did
	lost        chan struct{} // closed once the answer was lost
}

// link is one client connection and, once dialled, its server connection.
type link struct {
	client, server net.Conn
	// lost is set when the network is cut while the link lives: its bytes
	// are dropped from then on, and Restore closes it.
	lost bool
}

// New starts a proxy on a free loopback port that forwards to target
// (host:port). It is closed when t ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts the network: live connections lose every byte from now on, and
// new ones are held. Cutting a cut network changes nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut != nil {
		return
	}
	p.cut = make(chan struct{})
	for l := range p.links {
		l.lost = true
	}
}

// Restore brings the network back: the connections that lived through
// the cut are closed, the held ones reach the server.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		return
	}
	close(p.cut)
	p.cut = nil
	for l := range p.links {
		if l.lost {
			l.close()
			delete(p.links, l)
		}
	}
}

// LoseAnswer arms the proxy to lose one answer: on the first link whose
// client sends bytes holding ask, the first bytes the server sends back
// holding answer are dropped and the link is closed, both ends. The
// server did what was asked; the client never hears of it, as when a
// connection breaks after a request reached the server. The channel it
// returns is closed once the answer is lost. Arming it again replaces an
// answer not lost yet.
func (p *Proxy) LoseAnswer(ask, answer []byte) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose = &lose{ask: bytes.Clone(ask), answer: bytes.Clone(answer), lost: make(chan struct{})}
	return p.lose.lost
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	if p.cut != nil {
		close(p.cut)
		p.cut = nil
	}
	for l := range p.links {
		l.close()
		delete(p.links, l)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l := &link{client: c}
		p.mu.Lock()
		p.links[l] = struct{}{}
		held := p.cut
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(l, held)
	}
}

// serve carries a link to the server once the network is up (held is the
// cut it arrived during, or nil), then forwards both ways.
func (p *Proxy) serve(l *link, held chan struct{}) {
	defer p.wg.Done()
	if held != nil {
		<-held
	}
	server, err := net.Dial("tcp", p.target)
	p.mu.Lock()
	if _, open := p.links[l]; !open || err != nil {
		p.mu.Unlock()
		_ = l.client.Close()
		if server != nil {
			_ = server.Close()
		}
		return
	}
	l.server = server
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Go(func() { p.forward(l, l.server, l.client, true) })
	both.Go(func() { p.forward(l, l.client, l.server, false) })
	both.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// forward copies from src to dst until either ends, dropping what it
// reads while the link is lost, and what LoseAnswer is to lose.
func (p *Proxy) forward(l *link, dst, src net.Conn, fromClient bool) {
	defer l.close()
	buf := make([]byte, 32<<10)
	var seen []byte // the end of what came before, where a match may begin
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen = append(seen, buf[:n]...)
			p.mu.Lock()
			lost := l.lost
			drop := false
			lo := p.lose
			switch {
			case lo == nil || lost:
			case fromClient && lo.on == nil && bytes.Contains(seen, lo.ask):
				lo.on = l
			case !fromClient && lo.on == l && bytes.Contains(seen, lo.answer):
				p.lose = nil
				close(lo.lost)
				drop = true
			}
			if !fromClient && (lo == nil || lo.on != l) {
				seen = seen[:0] // an answer counts from the ask on
			}
			p.mu.Unlock()
			if drop {
				return
			}
			if !lost {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if keep := matchAcross; len(seen) > keep {
				seen = append(seen[:0], seen[len(seen)-keep:]...)
			}
		}
		if err != nil {
			return // EOF, or a side closed
		}
	}
}

// matchAcross is how many bytes of what a link carried before a read
// LoseAnswer's patterns may begin in.
const matchAcross = 4 << 10

// close closes both ends of the link (idempotent).
func (l *link) close() {
	_ = l.client.Close()
	if l.server != nil {
		_ = l.server.Close()
	}
}
