package activities_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

// keysOf runs one model pass of in on a model answering turn and returns the keys of what it
// published, in order.
func keysOf(t *testing.T, turn fake.Turn, in protocol.ModelPassInput) []string {
	t.Helper()
	broker := stream.NewMemory(stream.MemoryOptions{})
	a, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(fake.New(turn)), DefaultProvider: fake.ID})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	_, err = env.ExecuteActivity(protocol.ModelActivityName, in)
	require.NoError(t, err)
	es, err := broker.Read(context.Background(), in.RunID, 0, 0)
	require.NoError(t, err)
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	return keys
}

// The broker's de-duplication keys of the model activity, as stream/doc.go describes them: text
// chunks are "m:<opId>:<segment>:<n>" (start and end named), structured-data chunks
// "s:<streamId>:<attempt>:<n>".
func TestModelPassPublishingKeys(t *testing.T) {
	in := protocol.ModelPassInput{RunID: "run-1", Node: "n", OpID: "op-1", SegmentID: "step-0", Stream: true, Emit: true,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}
	require.Equal(t, []string{"m:op-1:step-0:start", "m:op-1:step-0:1", "m:op-1:step-0:2", "m:op-1:step-0:end"},
		keysOf(t, fake.Turn{Text: "Hello there", Deltas: []string{"Hello ", "there"}}, in))

	in.Structured = &protocol.StructuredStream{StreamID: "plan", DataType: "plan",
		Fields: map[string]contracts.StructuredKind{"title": contracts.StructuredSet}}
	require.Equal(t, []string{"s:plan:1:1"},
		keysOf(t, fake.Turn{Text: `{"title":"Trip"}`, Deltas: []string{`{"title":`, `"Trip"}`}}, in))
}
