package app

// StickyCacheSize is the sticky cache size NewWorker sets for c (0: the SDK's default).
func StickyCacheSize(c Config) int { return c.stickyCacheSize() }
