package http

import (
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	deny := Policy{DenyPrivate: true}
	allow := func(prefixes ...string) Policy {
		p := Policy{DenyPrivate: true}
		for _, s := range prefixes {
			p.Allow = append(p.Allow, netip.MustParsePrefix(s))
		}
		return p
	}
	tests := []struct {
		name   string
		policy Policy
		addr   string
		reason string // "": allowed
	}{
		{"loopback", deny, "127.0.0.1", reasonLoopback},
		{"all of 127/8", deny, "127.9.9.9", reasonLoopback},
		{"IPv6 loopback", deny, "::1", reasonLoopback},
		{"IPv4-mapped loopback", deny, "::ffff:127.0.0.1", reasonLoopback},
		{"10/8", deny, "10.1.2.3", reasonPrivate},
		{"172.16/12", deny, "172.31.255.255", reasonPrivate},
		{"192.168/16", deny, "192.168.1.1", reasonPrivate},
		{"IPv4-mapped private", deny, "::ffff:192.168.1.1", reasonPrivate},
		{"unique local", deny, "fd12:3456::1", reasonPrivate},
		{"link-local", deny, "169.254.1.1", reasonLinkLocal},
		{"IPv6 link-local", deny, "fe80::1", reasonLinkLocal},
		{"IPv6 link-local with a zone", deny, "fe80::1%eth0", reasonLinkLocal},
		{"carrier-grade NAT", deny, "100.64.0.1", reasonCGNAT},
		{"unspecified", deny, "0.0.0.0", reasonUnspecified},
		{"this network", deny, "0.1.2.3", reasonUnspecified},
		{"IPv6 unspecified", deny, "::", reasonUnspecified},
		{"multicast", deny, "224.0.0.1", reasonMulticast},
		{"IPv6 multicast", deny, "ff02::1", reasonMulticast},
		{"broadcast", deny, "255.255.255.255", reasonBroadcast},
		{"metadata", deny, "169.254.169.254", reasonMetadata},
		{"IPv4-mapped metadata", deny, "::ffff:169.254.169.254", reasonMetadata},
		{"AWS IPv6 metadata", deny, "fd00:ec2::254", reasonMetadata},
		{"public IPv4", deny, "93.184.215.14", ""},
		{"public IPv6", deny, "2606:4700:4700::1111", ""},
		{"just past CGNAT", deny, "100.128.0.1", ""},
		{"just past 172.16/12", deny, "172.32.0.1", ""},
		{"off: loopback", Policy{}, "127.0.0.1", ""},
		{"off: metadata", Policy{}, "169.254.169.254", ""},
		{"allowed range", allow("10.0.0.0/8"), "10.1.2.3", ""},
		{"outside the allowed range", allow("10.0.0.0/8"), "192.168.1.1", reasonPrivate},
		{"allowed as an IPv4-mapped prefix", allow("::ffff:10.0.0.0/104"), "10.1.2.3", ""},
		{"allowed range, mapped address", allow("127.0.0.1/32"), "::ffff:127.0.0.1", ""},
		{"a wide range does not open metadata", allow("169.254.0.0/16"), "169.254.169.254", reasonMetadata},
		{"but opens the rest of it", allow("169.254.0.0/16"), "169.254.1.1", ""},
		{"metadata named exactly", allow("169.254.169.254/32"), "169.254.169.254", ""},
		{"invalid address", deny, "", reasonInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ip netip.Addr
			if tt.addr != "" {
				ip = netip.MustParseAddr(tt.addr)
			}
			err := tt.policy.Check(ip)
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			var be *BlockedError
			require.ErrorAs(t, err, &be)
			require.Equal(t, tt.reason, be.Reason)
			require.Contains(t, err.Error(), "private networks are blocked by --deny-private-networks")
		})
	}
}

// TestPolicyControl checks the dialer hook on resolved addresses, which is
// where the policy is enforced: it runs before the socket connects.
func TestPolicyControl(t *testing.T) {
	t.Parallel()
	deny := Policy{DenyPrivate: true}
	err := deny.control("tcp4", "169.254.169.254:80", nil)
	require.EqualError(t, err, "refused to connect to 169.254.169.254:80 (cloud metadata): private networks are blocked by --deny-private-networks")
	err = deny.control("tcp6", "[::ffff:127.0.0.1]:8080", nil)
	require.EqualError(t, err, "refused to connect to 127.0.0.1:8080 (loopback): private networks are blocked by --deny-private-networks")
	require.Error(t, deny.control("tcp", "not an address", nil), "an unreadable address is not dialled")
	require.NoError(t, deny.control("tcp4", "93.184.215.14:443", nil))
}

func TestTransportShared(t *testing.T) {
	t.Parallel()
	a, b := netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")
	open := transportFor(Policy{})
	require.Same(t, open, transportFor(Policy{}), "calls without a policy share a transport")
	require.Same(t, open, transportFor(Policy{Allow: []netip.Prefix{a}}), "Allow means nothing while DenyPrivate is off")
	deny := transportFor(Policy{DenyPrivate: true, Allow: []netip.Prefix{a, b}})
	require.NotSame(t, open, deny)
	require.Same(t, deny, transportFor(Policy{DenyPrivate: true, Allow: []netip.Prefix{b, a, a}}), "equal policies share a transport")
	require.NotSame(t, deny, transportFor(Policy{DenyPrivate: true}))
	require.Nil(t, deny.Proxy, "with the guard on requests go direct")
}

// serveOn starts a test server on addr, or reports false when the machine
// cannot listen there.
func serveOn(t *testing.T, addr string, h nethttp.Handler) (*httptest.Server, bool) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, true
}

// network is a set of servers for one SSRF case: target and other answer
// "reached"; front stands for a public server that redirects.
type network struct {
	target, front *httptest.Server
	other         *httptest.Server // on 127.0.0.2; nil when the machine cannot listen there
	hits          atomic.Int32     // requests that reached target or other
	frontHits     atomic.Int32
}

func newNetwork(t *testing.T) *network {
	t.Helper()
	n := &network{}
	reached := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		n.hits.Add(1)
		io.WriteString(w, "reached")
	})
	n.target = httptest.NewServer(reached)
	t.Cleanup(n.target.Close)
	n.front = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n.frontHits.Add(1)
		nethttp.Redirect(w, r, r.URL.Query().Get("target"), nethttp.StatusFound)
	}))
	t.Cleanup(n.front.Close)
	n.other, _ = serveOn(t, "127.0.0.2:0", reached)
	return n
}

func (n *network) port() string {
	return strconv.Itoa(n.target.Listener.Addr().(*net.TCPAddr).Port)
}

// redirect is a URL of front that redirects to to.
func (n *network) redirect(to string) string {
	return n.front.URL + "/?target=" + url.QueryEscape(to)
}

func TestRunPrivateNetworks(t *testing.T) {
	t.Parallel()
	deny := Policy{DenyPrivate: true}
	// The redirect cases allow front's address, so only the hop it
	// redirects to is judged: operators allow ranges the same way.
	allowFront := Policy{DenyPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	tests := []struct {
		name      string
		url       func(n *network) string
		policy    Policy                  // what the host puts in Services
		refused   func(n *network) string // regexp of the refused address
		reason    string
		reachable bool // with the guard off, the request gets through
		redirect  bool
	}{
		{"a loopback address",
			func(n *network) string { return n.target.URL + "/" },
			deny, func(n *network) string { return regexp.QuoteMeta(n.target.Listener.Addr().String()) },
			reasonLoopback, true, false},
		{"IPv4-mapped IPv6 loopback",
			func(n *network) string { return "http://[::ffff:127.0.0.1]:" + n.port() + "/" },
			deny, func(n *network) string { return `127\.0\.0\.1:` + n.port() },
			reasonLoopback, true, false},
		{"a name that resolves to loopback",
			func(n *network) string { return "http://localhost:" + n.port() + "/" },
			deny, func(n *network) string { return `(127\.0\.0\.1|\[::1\]):` + n.port() },
			reasonLoopback, true, false},
		// Nothing listens there: the dialer's Control refuses the address
		// before the socket connects.
		{"cloud metadata",
			func(*network) string { return "http://169.254.169.254/latest/meta-data/" },
			deny, func(*network) string { return `169\.254\.169\.254:80` },
			reasonMetadata, false, false},
		{"a redirect to another loopback address",
			func(n *network) string { return n.redirect(n.other.URL + "/") },
			allowFront, func(n *network) string { return regexp.QuoteMeta(n.other.Listener.Addr().String()) },
			reasonLoopback, true, true},
		{"a redirect to cloud metadata",
			func(n *network) string { return n.redirect("http://169.254.169.254/latest/meta-data/") },
			allowFront, func(*network) string { return `169\.254\.169\.254:80` },
			reasonMetadata, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := newNetwork(t)
			if tt.redirect && tt.reachable && n.other == nil {
				t.Skip("cannot listen on 127.0.0.2 on this machine")
			}
			b := &bundle{}
			call := b.call(map[string]any{"url": tt.url(n)})
			call.Services = PolicyService.Provide(call.Services, tt.policy)
			_, err := run(t, call)
			require.NotNil(t, err, "the guard refuses %s", tt.url(n))
			require.Equal(t, node.CategoryConnection, err.Category)
			require.Equal(t, "ssrf_blocked", err.Code)
			require.True(t, err.Permanent, "a refused address is not retried")
			require.Regexp(t, `: refused to connect to `+tt.refused(n)+` \(`+regexp.QuoteMeta(tt.reason)+
				`\): private networks are blocked by --deny-private-networks$`, err.Message)
			require.Equal(t, tt.reason, err.Details["reason"])
			require.Zero(t, n.hits.Load(), "no request reached the refused server")
			if tt.redirect {
				require.Equal(t, int32(1), n.frontHits.Load(), "the allowed first hop went through")
				require.Contains(t, err.Details, "final_url")
			}

			if !tt.reachable {
				return
			}
			off := b.call(map[string]any{"url": tt.url(n)})
			out, err := run(t, off)
			require.Nil(t, err, "with the guard off %s is reachable", tt.url(n))
			require.Equal(t, 200, out["status"])
			require.Equal(t, "reached", out["body"])
			require.Equal(t, int32(1), n.hits.Load())
		})
	}
}
