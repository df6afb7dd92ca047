package mcpserver

// LiveSessions is how many sessions the server has open.
func (s *Server) LiveSessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}
