package stream

import "time"

// SetClock replaces the clock of m's retention (tests move time without waiting).
func SetClock(m *Memory, now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

// Runs is the number of runs m keeps.
func Runs(m *Memory) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs)
}
