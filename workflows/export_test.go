package workflows

// For the tests of workflows_test.

var Render = render

// LocalTools is localTools.
func (r *Registry) LocalTools() []string { return r.localTools() }
