package openai

// For the tests of openai_test.
const DefaultBaseURL = defaultBaseURL
