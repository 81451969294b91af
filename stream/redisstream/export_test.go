package redisstream

// Waiters is the number of waits registered with b's hub.
func Waiters(bb Broker) int {
	b := bb.(*broker)
	b.hub.mu.Lock()
	defer b.hub.mu.Unlock()
	n := 0
	for _, ws := range b.hub.waiters {
		n += len(ws)
	}
	return n
}

// Keys are the Redis keys of a run: stream, key hash, meta.
func Keys(b Broker, runID string) []string { return b.(*broker).keys(runID) }
