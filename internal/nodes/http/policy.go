package http

import (
	"fmt"
	"net"
	nethttp "net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skeinhq/skein/node"
)

// PolicyService is the service under which the host hands the http kind
// its Policy. Without it every address may be reached.
var PolicyService = node.NewService[Policy]("an HTTP policy")

// Policy decides which addresses the http kind may connect to. The zero
// value allows every address.
type Policy struct {
	// DenyPrivate refuses connections to addresses inside the machine or
	// its networks: loopback, private (RFC 1918, fc00::/7), link-local,
	// carrier-grade NAT (100.64.0.0/10), unspecified, broadcast and
	// multicast addresses, and cloud metadata endpoints (169.254.169.254,
	// fd00:ec2::254). It is what --deny-private-networks sets. The address
	// is checked in the dialer after DNS resolution, on every hop of a
	// redirect. Requests then go out directly, never through a proxy from
	// the environment, which would hide the real destination.
	DenyPrivate bool
	// Allow lists ranges that stay reachable while DenyPrivate is on, for
	// operators who must let workflows reach one internal service (say
	// 10.20.0.0/16). A cloud metadata address is reachable only when Allow
	// names it exactly (169.254.169.254/32), never through a wider range.
	Allow []netip.Prefix
}

// BlockedError is the error of a connection the Policy refused.
type BlockedError struct {
	// Addr is the refused address, IPv4-mapped IPv6 unwrapped.
	Addr netip.Addr
	// Port is the port dialled, or 0 when the address alone was checked.
	Port uint16
	// Reason names the kind of address: loopback, private, link-local…
	Reason string
}

func (e *BlockedError) Error() string {
	where := e.Addr.String()
	if e.Port != 0 {
		where = netip.AddrPortFrom(e.Addr, e.Port).String()
	}
	return fmt.Sprintf("refused to connect to %s (%s): private networks are blocked by --deny-private-networks", where, e.Reason)
}

// Reasons a Policy gives for refusing an address.
const (
	reasonMetadata    = "cloud metadata"
	reasonLoopback    = "loopback"
	reasonUnspecified = "unspecified"
	reasonPrivate     = "private"
	reasonLinkLocal   = "link-local"
	reasonCGNAT       = "carrier-grade NAT"
	reasonMulticast   = "multicast"
	reasonBroadcast   = "broadcast"
	reasonInvalid     = "not an IP address"
)

var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OCI…
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// Check reports whether the policy lets connections reach ip: nil when it
// does, a *BlockedError saying why when it does not. IPv4-mapped IPv6
// addresses (::ffff:127.0.0.1) are judged as the IPv4 address they carry.
func (p Policy) Check(ip netip.Addr) error {
	if e := p.check(ip); e != nil {
		return e
	}
	return nil
}

func (p Policy) check(ip netip.Addr) *BlockedError {
	if !p.DenyPrivate {
		return nil
	}
	ip = ip.Unmap().WithZone("")
	reason := classify(ip)
	if reason == "" {
		return nil
	}
	for _, pre := range p.Allow {
		pre = unmapPrefix(pre)
		if !pre.IsValid() || !pre.Contains(ip) {
			continue
		}
		if reason == reasonMetadata && pre.Bits() != ip.BitLen() {
			continue
		}
		return nil
	}
	return &BlockedError{Addr: ip, Reason: reason}
}

// classify names the kind of a non-public address, or returns "" for a
// public one.
func classify(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return reasonInvalid
	case slices.Contains(metadataAddrs, ip):
		return reasonMetadata
	case ip.IsLoopback():
		return reasonLoopback
	case ip.IsUnspecified(), thisNetwork.Contains(ip):
		return reasonUnspecified
	case ip.IsPrivate():
		return reasonPrivate
	case ip.IsLinkLocalUnicast():
		return reasonLinkLocal
	case cgnat.Contains(ip):
		return reasonCGNAT
	case ip.IsMulticast():
		return reasonMulticast
	case ip == broadcast:
		return reasonBroadcast
	}
	return ""
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) into
// its IPv4 form, so it matches the unmapped addresses Check compares.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
	}
	return p.Masked()
}

// control is the dialer's Control hook: it runs on the resolved address
// after the socket is made and before it connects.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: an address we cannot read is not dialled.
		return &BlockedError{Reason: reasonInvalid}
	}
	if e := p.check(ap.Addr()); e != nil {
		e.Port = ap.Port()
		return e
	}
	return nil
}

// key identifies the transport a policy uses: policies that allow the same
// addresses share one.
func (p Policy) key() string {
	if !p.DenyPrivate {
		return "open"
	}
	allow := make([]string, 0, len(p.Allow))
	for _, pre := range p.Allow {
		allow = append(allow, unmapPrefix(pre).String())
	}
	slices.Sort(allow)
	return "deny-private allow=" + strings.Join(slices.Compact(allow), ",")
}

// transports holds one transport per policy, so connections are reused
// across calls and nodes.
var transports = struct {
	sync.Mutex
	m map[string]*nethttp.Transport
}{m: map[string]*nethttp.Transport{}}

// Client returns an HTTP client whose connections follow the policy (on
// the transport the http kind shares for it) and that does not follow
// redirects: for the host's own requests, such as a run's delivery.
func (p Policy) Client() *nethttp.Client {
	return &nethttp.Client{
		Transport:     transportFor(p),
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse },
	}
}

// transportFor returns the shared transport of a policy.
func transportFor(p Policy) *nethttp.Transport {
	k := p.key()
	transports.Lock()
	defer transports.Unlock()
	if t, ok := transports.m[k]; ok {
		return t
	}
	t := newTransport(p)
	transports.m[k] = t
	return t
}

func newTransport(p Policy) *nethttp.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	proxy := nethttp.ProxyFromEnvironment
	if p.DenyPrivate {
		p.Allow = slices.Clone(p.Allow)
		d.Control = p.control
		proxy = nil
	}
	return &nethttp.Transport{
		Proxy:                 proxy,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// policyFrom reads the policy the host put in the call's services.
func policyFrom(services *node.Services) (Policy, error) {
	p, _ := PolicyService.Lookup(services)
	return p, nil
}
