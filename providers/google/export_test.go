package google

// For the tests of google_test.
const (
	EnvRegion    = envRegion
	EnvVertexURL = envVertexURL
)

const (
	EnvProject  = envProject
	EnvLocation = envLocation
)
