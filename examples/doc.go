// Package examples registers the example agents that a worker is told to run, with what they
// need on the worker (the support example's tools and its scripted fake model). The
// repository's worker, the starter's demo and the tests use it; a worker of your own registers
// its own agents and does not import it.
//
//	set, err := examples.FromEnv() // KORTYX_EXAMPLES=support,hello
//	if err != nil {
//		return err
//	}
//	o := set.Options() // their Register, tools, default workflow and scripted model
//	o.Providers = allproviders.FromEnv()
//	return app.Run(ctx, app.ConfigFromEnv(), o)
package examples
