package anthropic

// For the tests of anthropic_test.
const (
	DefaultBaseURL   = defaultBaseURL
	DefaultMaxTokens = defaultMaxTokens
)
