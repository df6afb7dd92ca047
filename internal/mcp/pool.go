package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Service is the key of the run's *Pool in node.Call.Services.
var Service = node.NewService[*Pool]("MCP servers")

// Defaults of a Pool's timings.
const (
	// DefaultCloseGrace is how long a stdio server has to exit once its
	// stdin is closed before its process group is killed.
	DefaultCloseGrace = 2 * time.Second
	// DefaultStartTimeout bounds a server's start and handshake.
	DefaultStartTimeout = time.Minute
	// pingTimeout bounds the health check of a server after a call to it
	// was cut short.
	pingTimeout = 500 * time.Millisecond
)

// Pool holds the MCP sessions of one run: one per server, started on first
// use, shared by every node, closed by Close. Its methods are safe for
// concurrent use. Set its fields before the first use.
type Pool struct {
	// Allow, when not nil, is asked before a stdio server is spawned, with
	// the absolute path of the program that would run (found with the
	// server's PATH); an error refuses it (mcp_start, command_not_allowed,
	// permanent). Nil allows every command the workflow declares.
	Allow func(cmd string) error
	// CloseGrace is how long a stdio server has to exit after its stdin is
	// closed before its process group is killed. Zero means
	// DefaultCloseGrace.
	CloseGrace time.Duration
	// StartTimeout bounds a server's start and handshake. Zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Tape, when set, records the pool's tool lists and tool calls, or
	// answers them from a cassette without starting any server (a
	// replay).
	Tape *cassette.Tape

	servers map[string]*workflow.MCPServer
	scope   *expr.Scope

	clientOnce sync.Once
	client     *sdk.Client // made at the first start: most runs start no server

	mu     sync.Mutex
	conns  map[string]*conn
	taped  map[string][]*Tool // tool lists through Tape, by server
	closed bool
	wg     sync.WaitGroup // starts and closes running in the background

	// progress holds the progress callback of each call that has one, by
	// its progress token.
	progress   sync.Map
	progressID atomic.Int64
}

// Progress is a progress notification a server sent during a call.
type Progress struct {
	Progress float64
	Total    float64 // 0: unknown
	Message  string
}

// NewPool returns a pool for the given servers. Templates in their args,
// env and headers are rendered in scope when a server starts. NewPool starts
// nothing.
func NewPool(servers []*workflow.MCPServer, scope *expr.Scope) *Pool {
	p := &Pool{
		servers: make(map[string]*workflow.MCPServer, len(servers)),
		scope:   scope,
		conns:   map[string]*conn{},
	}
	for _, s := range servers {
		p.servers[s.Name] = s
	}
	return p
}

// sdkClient returns the client every session of the pool goes through,
// making it on first use.
func (p *Pool) sdkClient() *sdk.Client {
	p.clientOnce.Do(func() {
		p.client = sdk.NewClient(&sdk.Implementation{Name: "skein", Version: "1"}, &sdk.ClientOptions{
			// No roots: a server such as the filesystem one would take
			// them as its allowed folders instead of its arguments.
			Capabilities:                &sdk.ClientCapabilities{},
			ProgressNotificationHandler: p.onProgress,
		})
	})
	return p.client
}

// Scope returns the scope server templates are rendered in: the run's
// inputs and secrets.
func Scope(inputs map[string]any, secrets map[string]string) *expr.Scope {
	sec := make(map[string]any, len(secrets))
	for k, v := range secrets {
		sec[k] = v
	}
	return &expr.Scope{Inputs: inputs, Secrets: sec}
}

// conn is the session with one server, from its start to its close.
type conn struct {
	server string
	ready  chan struct{} // closed when the start is over
	stop   context.CancelFunc
	// Set by the start, read after ready.
	err  error
	cs   *sdk.ClientSession
	proc *process     // stdio servers
	hc   *http.Client // HTTP servers

	mu     sync.Mutex
	tools  map[string]*Tool // nil until listed
	list   []*Tool
	broken bool // the connection failed; the next use starts afresh

	closeOnce sync.Once
}

// alive reports whether a started conn can still be used.
func (c *conn) alive() bool {
	select {
	case <-c.ready:
	default:
		return true // starting
	}
	if c.err != nil || (c.proc != nil && c.proc.done()) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.broken
}

func (c *conn) stderr() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.stderr.String()
}

// close ends the session. A stdio server gets grace to exit after its stdin
// closes, then its process group is killed.
func (c *conn) close(grace time.Duration) {
	c.closeOnce.Do(func() {
		if c.cs == nil {
			return
		}
		if c.proc == nil {
			_ = c.cs.Close()
			c.hc.CloseIdleConnections()
			return
		}
		closed := make(chan struct{})
		go func() {
			_ = c.cs.Close() // closes the server's stdin
			close(closed)
		}()
		c.proc.stop(grace)
		// With the server dead its stdout is at EOF and Close returns.
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-closed:
		case <-t.C:
		}
	})
}

func (p *Pool) grace() time.Duration {
	if p.CloseGrace > 0 {
		return p.CloseGrace
	}
	return DefaultCloseGrace
}

// conn returns the live session with server, starting the server if
// needed. It waits for the start until ctx ends; the start itself goes on,
// bounded by StartTimeout, so a retry finds the server ready.
func (p *Pool) conn(ctx context.Context, server string) (*conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, &node.Error{Code: "pool_closed", Category: node.CategoryCancelled, Message: ErrClosed.Error(), Err: ErrClosed}
	}
	c := p.conns[server]
	if c != nil && !c.alive() {
		p.retireLocked(c, p.grace())
		c = nil
	}
	if c == nil {
		def, ok := p.servers[server]
		if !ok {
			p.mu.Unlock()
			return nil, unknownServer(server)
		}
		timeout := p.StartTimeout
		if timeout <= 0 {
			timeout = DefaultStartTimeout
		}
		startCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		c = &conn{server: server, ready: make(chan struct{}), stop: stop}
		p.conns[server] = c
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer stop()
			p.start(startCtx, c, def)
		}()
	}
	p.mu.Unlock()

	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, waitError(ctx, server)
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

func waitError(ctx context.Context, server string) *node.Error {
	e := node.AsError(ctx.Err())
	e.Message = fmt.Sprintf("MCP server %q: gave up waiting for it to start: %v", server, context.Cause(ctx))
	return e
}

// start connects c to its server and closes c.ready. A failed start is
// removed from the pool, so the next use tries again.
func (p *Pool) start(ctx context.Context, c *conn, s *workflow.MCPServer) {
	defer close(c.ready)
	if s.URL != "" {
		hc, err := httpClient(s, p.scope)
		if err == nil {
			c.hc = hc
			c.cs, err = connectHTTP(ctx, p.sdkClient(), s, hc)
		}
		c.err = err
	} else {
		c.cs, c.proc, c.err = p.startStdio(ctx, s)
	}
	if c.err != nil {
		p.mu.Lock()
		if p.conns[c.server] == c {
			delete(p.conns, c.server)
		}
		p.mu.Unlock()
	}
}

func (p *Pool) startStdio(ctx context.Context, s *workflow.MCPServer) (*sdk.ClientSession, *process, error) {
	cmd, err := prepareStdio(s, p.scope)
	if err != nil {
		return nil, nil, err
	}
	if p.Allow != nil {
		if err := p.Allow(cmd.path); err != nil {
			e := startError(s.Name, "command_not_allowed", true, "", "command %q (%s) is not allowed: %v", s.Command, cmd.path, err)
			e.Err = err
			return nil, nil, e
		}
	}
	return connectStdio(ctx, p.sdkClient(), s, cmd)
}

// retireLocked removes c from the pool and closes it in the background,
// giving a stdio server grace to exit. p.mu is held.
func (p *Pool) retireLocked(c *conn, grace time.Duration) {
	if p.conns[c.server] == c {
		delete(p.conns, c.server)
	}
	if p.closed {
		return // Close owns it
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-c.ready
		c.close(grace)
	}()
}

func (p *Pool) retire(c *conn, grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retireLocked(c, grace)
}

// Session returns the session with server, starting it if needed. The
// session belongs to the pool: use it, never close it.
func (p *Pool) Session(ctx context.Context, server string) (*sdk.ClientSession, error) {
	c, err := p.conn(ctx, server)
	if err != nil {
		return nil, err
	}
	return c.cs, nil
}

// Evict drops the cached tool list of server, so the next use lists its
// tools again, and forgets its session if the server has died. The mcp kind
// calls it before a retry.
func (p *Pool) Evict(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.taped, server)
	c := p.conns[server]
	if c == nil {
		return
	}
	if !c.alive() {
		p.retireLocked(c, p.grace())
		return
	}
	c.mu.Lock()
	c.tools, c.list = nil, nil
	c.mu.Unlock()
}

// Tools lists the tools of server, from the session's cache when it has
// listed them before. The list is shared: read it, never modify it.
func (p *Pool) Tools(ctx context.Context, server string) ([]*Tool, error) {
	if p.Tape != nil {
		return p.tapedTools(ctx, server)
	}
	return p.liveTools(ctx, server)
}

func (p *Pool) liveTools(ctx context.Context, server string) ([]*Tool, error) {
	c, err := p.conn(ctx, server)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	list := c.list
	c.mu.Unlock()
	if list != nil {
		return list, nil
	}
	return p.listTools(ctx, c)
}

// Tool returns the named tool of server. When the cached list lacks it the
// tools are listed again, in case the server's changed.
func (p *Pool) Tool(ctx context.Context, server, name string) (*Tool, error) {
	if p.Tape != nil {
		list, err := p.tapedTools(ctx, server)
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			if t.Name == name {
				return t, nil
			}
		}
		return nil, unknownTool(server, name, list)
	}
	c, err := p.conn(ctx, server)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	t := c.tools[name]
	c.mu.Unlock()
	if t != nil {
		return t, nil
	}
	list, err := p.listTools(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, t := range list {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, unknownTool(server, name, list)
}

// unknownTool is the error of a tool server does not have.
func unknownTool(server, name string, list []*Tool) error {
	names := make([]string, len(list))
	for i, t := range list {
		names[i] = t.Name
	}
	return &node.Error{
		Code: "unknown_tool", Category: node.CategoryValidation, Permanent: true,
		Message: fmt.Sprintf("MCP server %q has no tool %q%s (it has: %s)", server, name, didYouMean(name, names), joinNames(names)),
		Details: map[string]any{"server": server, "tool": name, "tools": names},
	}
}

// tapedTools lists the tools of server through the pool's Tape, once per
// run (a replay starts no server for it).
func (p *Pool) tapedTools(ctx context.Context, server string) ([]*Tool, error) {
	p.mu.Lock()
	list, ok := p.taped[server]
	p.mu.Unlock()
	if ok {
		return list, nil
	}
	tools, err := cassette.Do(ctx, p.Tape, cassette.KindMCPTools, map[string]any{"server": server}, func(ctx context.Context) ([]*sdk.Tool, error) {
		list, err := p.liveTools(ctx, server)
		if err != nil {
			return nil, err
		}
		out := make([]*sdk.Tool, len(list))
		for i, t := range list {
			out[i] = t.Tool
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	list = make([]*Tool, len(tools))
	for i, t := range tools {
		list[i] = &Tool{Server: server, Tool: t}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taped == nil {
		p.taped = map[string][]*Tool{}
	}
	p.taped[server] = list
	return list, nil
}

// listTools lists the tools of c's server and caches them.
func (p *Pool) listTools(ctx context.Context, c *conn) ([]*Tool, error) {
	var list []*Tool
	var byName map[string]*Tool
	c, err := p.request(ctx, c, func(ctx context.Context, c *conn) error {
		list, byName = nil, map[string]*Tool{}
		for t, err := range c.cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			tool := &Tool{Server: c.server, Tool: t}
			list = append(list, tool)
			byName[t.Name] = tool
		}
		return nil
	})
	if err != nil {
		return nil, p.requestError(ctx, c, "tools/list", err)
	}
	if list == nil {
		list = []*Tool{}
	}
	c.mu.Lock()
	c.tools, c.list = byName, list
	c.mu.Unlock()
	return list, nil
}

// onProgress hands a progress notification to the callback of its call.
func (p *Pool) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if fn, ok := p.progress.Load(token); ok {
		fn.(func(Progress))(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}

// CallTool calls a tool of server with args and returns its result; see
// CallToolProgress.
func (p *Pool) CallTool(ctx context.Context, server, tool string, args map[string]any) (*sdk.CallToolResult, error) {
	return p.CallToolProgress(ctx, server, tool, args, nil)
}

// CallToolProgress calls a tool of server with args and returns its
// result; when progress is not nil, the call asks for progress
// notifications and progress gets each one the server sends, never after
// CallToolProgress returned. A
// result with IsError set is a result, not an error: the caller decides.
// Errors are node.Errors: mcp_start when the server could not start,
// mcp_protocol when it died, dropped the connection or answered with a
// JSON-RPC error, timeout or cancelled when ctx ended first.
func (p *Pool) CallToolProgress(ctx context.Context, server, tool string, args map[string]any, progress func(Progress)) (*sdk.CallToolResult, error) {
	if p.Tape == nil {
		return p.callTool(ctx, server, tool, args, progress)
	}
	if args == nil {
		args = map[string]any{}
	}
	req := map[string]any{"server": server, "tool": tool, "arguments": args}
	return cassette.Do(ctx, p.Tape, cassette.KindMCPCall, req, func(ctx context.Context) (*sdk.CallToolResult, error) {
		return p.callTool(ctx, server, tool, args, progress)
	})
}

func (p *Pool) callTool(ctx context.Context, server, tool string, args map[string]any, progress func(Progress)) (*sdk.CallToolResult, error) {
	c, err := p.conn(ctx, server)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	if progress != nil {
		// progress is never called once the call has returned.
		var mu sync.Mutex
		done := false
		token := fmt.Sprintf("skein-%d", p.progressID.Add(1))
		p.progress.Store(token, func(pr Progress) {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				progress(pr)
			}
		})
		defer func() {
			p.progress.Delete(token)
			mu.Lock()
			done = true
			mu.Unlock()
		}()
		params.SetProgressToken(token)
	}
	var res *sdk.CallToolResult
	c, err = p.request(ctx, c, func(ctx context.Context, c *conn) (err error) {
		res, err = c.cs.CallTool(ctx, params)
		return err
	})
	if err != nil {
		return nil, p.requestError(ctx, c, fmt.Sprintf("tools/call %q", tool), err)
	}
	return res, nil
}

// request sends a request to c's server with do. When a streamable HTTP
// server answers that it does not know the session (404 Not Found: it
// restarted), a new session is opened at once and the request sent again
// in it: it never reached the server's tools. It returns the conn the
// last attempt used.
func (p *Pool) request(ctx context.Context, c *conn, do func(context.Context, *conn) error) (*conn, error) {
	err := p.watched(ctx, c, do)
	if err == nil || c.hc == nil || !errors.Is(err, sdk.ErrSessionMissing) || ctx.Err() != nil {
		return c, err
	}
	c.mu.Lock()
	c.broken = true
	c.mu.Unlock()
	p.retire(c, 0)
	fresh, cerr := p.conn(ctx, c.server)
	if cerr != nil {
		return c, err
	}
	return fresh, p.watched(ctx, fresh, do)
}

// watched runs do with a context that c.watch ends when the server exits.
func (p *Pool) watched(ctx context.Context, c *conn, do func(context.Context, *conn) error) error {
	wctx, done := c.watch(ctx)
	defer done()
	return do(wctx, c)
}

// errExited is the cause of a request's context when its stdio server
// exited while the request waited.
var errExited = errors.New("the MCP server exited")

// watch returns a context for a request to c's server that ends when a
// stdio server exits: a process it started may hold the server's stdout
// open, and the stream then never ends, but the request must. The returned
// function releases the watch.
func (c *conn) watch(ctx context.Context) (context.Context, func()) {
	if c.proc == nil {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-c.proc.exited:
			cancel(errExited)
		case <-wctx.Done():
		}
	}()
	return wctx, func() { cancel(nil) }
}

// requestError explains a failed request to c's server and, when the
// server is dead or hung, retires its session so the next use starts it
// again.
func (p *Pool) requestError(ctx context.Context, c *conn, what string, err error) error {
	if ctx.Err() != nil {
		e := node.AsError(ctx.Err())
		e.Message = fmt.Sprintf("MCP server %q: %s did not finish: %v", c.server, what, context.Cause(ctx))
		if !p.healthy(ctx, c) {
			e.Message += "; the server did not answer a ping either, so it was stopped"
			p.retire(c, 0) // hung: no point waiting for it to read its stdin
		}
		e.Details = details(c.server, c.stderr())
		return e
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return protocolError(c.server, "protocol_error", err, c.stderr(),
			"%s was answered with an error: %s (JSON-RPC code %d)", what, rpcErr.Message, rpcErr.Code)
	}
	// Anything else leaves the connection unusable: a dead server, a
	// dropped or garbled stream.
	c.mu.Lock()
	c.broken = true
	c.mu.Unlock()
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sdk.ErrConnectionClosed) ||
		(c.proc != nil && c.proc.done()) // its stream may stay open, held by a process it started
	// The end of the stream comes just before the server is reaped: wait
	// for that, to say how it ended.
	exited := closed && c.proc != nil && c.proc.exitedWithin(500*time.Millisecond)
	p.retire(c, p.grace())
	switch {
	case exited:
		return protocolError(c.server, "server_exited", err, c.stderr(), "the server exited during %s (%s)", what, c.proc.status())
	case closed:
		return protocolError(c.server, "connection_closed", err, c.stderr(), "the connection closed during %s: %v", what, err)
	}
	return protocolError(c.server, "protocol_error", err, c.stderr(), "%s failed: the server's answer is not valid MCP: %v", what, err)
}

// healthy pings c's server after a request to it was cut short. A server
// that does not answer within pingTimeout is hung.
func (p *Pool) healthy(ctx context.Context, c *conn) bool {
	if c.proc != nil && c.proc.done() {
		return false
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
	defer cancel()
	return c.cs.Ping(pctx, nil) == nil
}

// Close closes every session and waits for the servers to exit: a stdio
// server gets CloseGrace after its stdin closes, then its process group is
// killed. Servers close in parallel, so Close takes at most about
// CloseGrace however many are stuck. Calls after Close fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := slices.Collect(maps.Values(p.conns))
	p.conns = nil
	p.mu.Unlock()

	grace := p.grace()
	var wg sync.WaitGroup
	for _, c := range conns {
		c.stop() // abort a start in progress
		wg.Go(func() {
			<-c.ready
			c.close(grace)
		})
	}
	wg.Wait()
	p.wg.Wait()
	return nil
}
