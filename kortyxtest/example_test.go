package kortyxtest_test

import (
	"fmt"

	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
)

// Run the hello agent, answering its question when it asks, and read what it published.
func ExampleEnv() {
	reg := workflows.NewRegistry()
	if err := hello.Register(reg); err != nil {
		fmt.Println(err)
		return
	}
	env := kortyxtest.New(reg, kortyxtest.Options{})
	env.OnQuestion("name", kortyxtest.Text("Ada")) // hooks.AskText(ctx, "name", …)
	res, err := env.Run("hello", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Types())
	fmt.Println(env.Asked()[0].Input.Question)
	fmt.Println(res.State.UI.Message)
	// Output:
	// [interrupt done message done]
	// What is your name?
	// Hello, Ada!
}

// Replay a run of the hello agent, recorded from a dev server with
// `temporal workflow show --workflow-id <id> -o json > testdata/hello.json`, against today's
// code. A change that breaks runs in flight makes this fail.
func ExampleReplayFile() {
	reg := workflows.NewRegistry()
	if err := hello.Register(reg); err != nil {
		fmt.Println(err)
		return
	}
	err := kortyxtest.ReplayFile(reg, "testdata/hello.json", kortyxtest.ReplayOptions{})
	fmt.Println("replayed:", err == nil)
	// Output:
	// replayed: true
}
