package contracts

// The usage and finish reason of a model pass, which failure descriptors report for a pass
// that failed; the providers package names them as part of a model response.

// Usage is normalized token usage; Total defaults to Input+Output(+Reasoning when reported apart).
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	Total      int `json:"total"`
	Reasoning  int `json:"reasoning,omitempty"`
	CacheRead  int `json:"cacheRead,omitempty"`
	CacheWrite int `json:"cacheWrite,omitempty"`
}

// FinishReason says why a model pass ended: Unified is one of the providers.Finish* values ("stop", "length", …), Raw the
// provider's own word.
type FinishReason struct {
	Unified string `json:"unified"`
	Raw     string `json:"raw,omitempty"`
}
