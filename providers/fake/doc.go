// Package fake is a scripted model provider for tests and key-less demos: each model pass
// plays the next [Turn] of a script, or asks a [Responder] what to answer. It streams, calls
// tools, reports usage, fails and waits exactly as told, so agents can be tested offline with
// exact counts of model passes.
//
//	model := fake.New(
//		fake.Call("lookup_order", `{"orderId":"A-1"}`),
//		fake.Text("Your order ships tomorrow."),
//	)
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(model)})
//	if err != nil {
//		return err
//	}
//	// ... register acts and run the agent ...
//	fmt.Println(model.Calls()) // 2
//
// The test kit (package kortyxtest) runs an agent on a fake model in the Temporal test
// environment; the package example calls the model directly.
package fake
