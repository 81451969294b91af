// Package devserver finds, installs, starts and stops a local Temporal
// development server ("temporal server start-dev" from the Temporal CLI).
//
// It backs the worker's dev mode and the integration tests: both need a
// throwaway or file-backed Temporal server that starts in about a second, is
// ready to serve a namespace when [Start] returns, and dies with the process
// that started it.
//
// # Finding the CLI
//
// [Find] looks for the temporal binary in $TEMPORAL_CLI_PATH, then in
// <root>/.tools/bin, then on $PATH. [Install] builds the pinned version
// ([CLIModule]@[CLIVersion]) into <root>/.tools/bin with "go install";
// [FindOrInstall] does the former and falls back to the latter. Install shows
// its progress: the packages "go install -v" builds and, every 15 seconds, how
// long it has been running. The same install by hand is:
//
//	GOBIN=$PWD/.tools/bin go install github.com/temporalio/cli/cmd/temporal@v1.5.1
//
// # Starting a server
//
// [Start] launches the server with free ports, waits until the frontend is
// healthy and the namespace answers, and returns a [Server]. Unless
// [Options.Untuned] is set, the server runs with [TunedDynamicConfig], which
// cuts per-step workflow latency from roughly 100 ms to roughly 12 ms. The
// child runs in its own process group; on Linux it also receives SIGKILL if
// the parent process dies, so a crashed worker or test never leaks a server.
//
// # Example
//
//	ctx := context.Background()
//	bin, err := devserver.FindOrInstall(ctx, "", os.Stderr)
//	if err != nil {
//		log.Fatal(err)
//	}
//	srv, err := devserver.Start(ctx, devserver.Options{
//		BinaryPath:       bin,
//		DBFile:           ".kortyx/temporal.db", // "" keeps everything in memory
//		SearchAttributes: contracts.SearchAttributeNames(),
//		Log:              os.Stderr,
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Stop()
//
//	c, err := srv.Client(client.Options{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer c.Close()
//	fmt.Printf("temporal at %s, UI at http://%s\n", srv.Address(), srv.UIAddress())
package devserver
