// Package examples registers the example agents that a worker is told to run, with what they
// need on the worker (the support example's tools and its scripted fake model). The
// repository's worker, the starter's demo and the tests use it; a worker of your own registers
// its own agents and does not import it.
//
//	set, err := examples.FromEnv() // KORTYX_EXAMPLES=support,hello
//	if err != nil {
//		return err
//	}
//	opts, err := set.Backend()
//	if err != nil {
//		return err
//	}
//	backend, err := app.NewBackend(ctx, opts)
//	if err != nil {
//		return err
//	}
//	defer backend.Close()
//	reg := workflows.NewRegistry()
//	reg.SetToolNames(backend.Tools.Names()...)
//	err = set.Register(reg)
package examples
