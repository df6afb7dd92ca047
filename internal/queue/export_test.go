package queue

// PartsWaiting is how many runs' applies wait for the worker's next
// transaction (commit.go).
func (d *Driver) PartsWaiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.parts)
}
