package mcp

// ServerPID returns the pid of a started stdio server, or 0.
func ServerPID(p *Pool, server string) int {
	p.mu.Lock()
	c := p.conns[server]
	p.mu.Unlock()
	if c == nil {
		return 0
	}
	<-c.ready
	if c.proc == nil {
		return 0
	}
	return c.proc.tree.Pid()
}

// ClientMade reports whether the pool has made its MCP client.
func ClientMade(p *Pool) bool { return p.client != nil }
