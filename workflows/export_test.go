package workflows

import "github.com/kortyx-go/kortyx/internal/protocol"

// For the tests of workflows_test.

var Render = render

// LocalTools is localTools.
func (r *Registry) LocalTools() []string { return r.localTools() }

// StartRecord is startRecord.
func (r *Registry) StartRecord(in protocol.RunStart, seed []byte) *protocol.StartRecord {
	return r.startRecord(in, seed)
}
