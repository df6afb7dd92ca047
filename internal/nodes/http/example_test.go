package http_test

import (
	"fmt"
	"net/netip"

	skeinhttp "github.com/skeinhq/skein/internal/nodes/http"
)

func ExamplePolicy_Check() {
	p := skeinhttp.Policy{
		DenyPrivate: true,
		Allow:       []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}, // one internal service
	}
	for _, a := range []string{"::ffff:127.0.0.1", "169.254.169.254", "10.20.0.7", "10.30.0.7", "93.184.215.14"} {
		fmt.Printf("%-16s %v\n", a, p.Check(netip.MustParseAddr(a)))
	}
	// Output:
	// ::ffff:127.0.0.1 refused to connect to 127.0.0.1 (loopback): private networks are blocked by --deny-private-networks
	// 169.254.169.254  refused to connect to 169.254.169.254 (cloud metadata): private networks are blocked by --deny-private-networks
	// 10.20.0.7        <nil>
	// 10.30.0.7        refused to connect to 10.30.0.7 (private): private networks are blocked by --deny-private-networks
	// 93.184.215.14    <nil>
}
