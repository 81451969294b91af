package fake_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/providers/conformance"
)

// TestConformance runs the provider suite against the in-process fake.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Fake())
}
