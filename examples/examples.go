package examples

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

// Names are the examples, in the order they are registered.
var Names = []string{"support", "triage", "hello", "research"}

var register = map[string]func(*workflows.Registry) error{
	"support":  support.Register,
	"triage":   triage.Register,
	"hello":    hello.Register,
	"research": research.Register,
}

// Set is a choice of examples.
type Set struct {
	names []string
	tools []tools.Tool // the support example's, over Store
	// Store is the support example's shop data behind its tools (nil without support).
	Store *support.Store
}

// FromEnv is [Parse] of KORTYX_EXAMPLES.
func FromEnv() (*Set, error) {
	s, err := Parse(os.Getenv("KORTYX_EXAMPLES"))
	if err != nil {
		return nil, fmt.Errorf("kortyx: KORTYX_EXAMPLES: %w", err)
	}
	return s, nil
}

// Parse reads a comma-separated list of examples: "" or "all" is every example, "none" is
// none. An unknown name is an error that lists the known ones.
func Parse(list string) (*Set, error) {
	s := &Set{}
	switch strings.TrimSpace(list) {
	case "", "all":
		s.names = slices.Clone(Names)
	case "none":
	default:
		for _, n := range strings.Split(list, ",") {
			n = strings.TrimSpace(n)
			if n == "" || slices.Contains(s.names, n) {
				continue
			}
			if register[n] == nil {
				return nil, fmt.Errorf("unknown example %q (the examples are %s; or \"all\", or \"none\")", n, strings.Join(Names, ", "))
			}
			s.names = append(s.names, n)
		}
		// Registered in the order of Names, whatever the order of the list.
		slices.SortFunc(s.names, func(a, b string) int { return slices.Index(Names, a) - slices.Index(Names, b) })
	}
	if s.Has("support") {
		s.Store = support.NewStore()
		ts, err := support.Tools(s.Store)
		if err != nil {
			return nil, err
		}
		s.tools = ts
	}
	return s, nil
}

// Names returns the chosen examples, in registration order.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Has reports whether the example is chosen.
func (s *Set) Has(name string) bool { return slices.Contains(s.names, name) }

// Register registers the chosen examples on reg.
func (s *Set) Register(reg *workflows.Registry) error {
	for _, n := range s.names {
		if err := register[n](reg); err != nil {
			return err
		}
	}
	return nil
}

// Options returns what a program runs the chosen examples with ([app.Run]): their Register,
// their default workflow, their tools plus extra, and their scripted fake model. With support:
// its lookup_order and refund tools over [Set.Store], its scripted model and its workflow as
// the default.
func (s *Set) Options(extra ...tools.Tool) app.Options {
	o := app.Options{Register: s.Register, DefaultWorkflow: s.DefaultWorkflow(), Tools: append(slices.Clone(s.tools), extra...)}
	if s.Store != nil {
		o.FakeModel = support.FakeModel()
	}
	return o
}

// DefaultWorkflow is the workflow of a chat session whose first request names none: support
// when it is chosen, else none.
func (s *Set) DefaultWorkflow() string {
	if s.Has("support") {
		return support.WorkflowID
	}
	return ""
}

// Registry returns a new registry with every example registered.
func Registry() (*workflows.Registry, error) {
	s, err := Parse("all")
	if err != nil {
		return nil, err
	}
	reg := workflows.NewRegistry()
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return reg, nil
}
