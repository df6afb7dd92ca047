package node

import "context"

type callKey struct{}

// WithCall returns ctx carrying the call a kind runs, so that what the
// kind calls through a shared client (an HTTP transport, the MCP pool)
// can tell which node, visit and attempt a request belongs to. The
// engine sets it around every Kind.Run.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call ctx carries (WithCall), or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}
