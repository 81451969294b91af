// Package kortyxtest is a test kit for Kortyx agents: it runs your registry's agents in
// Temporal's test environment (go.temporal.io/sdk/testsuite: time skipping, no server) with the
// run workflow, the activities, an in-memory stream and, for hooks.Reason, a model of your
// choice (the scripted fake of providers/fake), answers the run's questions as the test says,
// and hands back the published chunks and the run's result. [Replay] replays a recorded history
// against today's code, so that a change that would break runs in flight fails a test first.
//
// A test of an agent that asks for a name and greets:
//
//	func TestHello(t *testing.T) {
//		reg := workflows.NewRegistry()
//		require.NoError(t, hello.Register(reg))
//		env := kortyxtest.New(reg, kortyxtest.Options{})
//		env.OnQuestion("name", kortyxtest.Text("Ada")) // hooks.AskText(ctx, "name", …)
//		res, err := env.Run("hello", "")
//		require.NoError(t, err)
//		require.Equal(t, []string{"interrupt", "done", "message", "done"}, env.Types())
//		require.Equal(t, "Hello, Ada!", res.State.UI.Message)
//	}
//
// With a model:
//
//	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("It ships tomorrow."))
//	env := kortyxtest.New(reg, kortyxtest.Options{Model: model, Tools: toolSet})
//
// A replay test over a history recorded with
// `temporal workflow show --workflow-id <id> -o json > testdata/run.json`:
//
//	func TestReplay(t *testing.T) {
//		reg := workflows.NewRegistry()
//		require.NoError(t, support.Register(reg))
//		require.NoError(t, kortyxtest.ReplayFile(reg, "testdata/run.json", kortyxtest.ReplayOptions{}))
//	}
package kortyxtest
