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
// <root>/.tools/bin, then on $PATH. [FindOrInstall] falls back to building
// the pinned version into <root>/.tools/bin with "go install -v", showing its
// progress: the packages it builds and, every 15 seconds, how long it has
// been running. The same install by hand is:
//
//	GOBIN=$PWD/.tools/bin go install github.com/temporalio/cli/cmd/temporal@v1.5.1
//
// # Starting a server
//
// [Start] launches the server with free ports (left in TIME_WAIT until the
// server binds them, so that another process asking the kernel for a free port,
// another dev server's internal services among them, is not given one of
// them), waits until the frontend is
// healthy and the namespace answers, and returns a [Server]. Unless
// [Options.Untuned] is set, the server runs with [TunedDynamicConfig], which
// cuts per-step workflow latency from roughly 100 ms to roughly 12 ms. The
// child runs in its own process group; on Linux it also receives SIGKILL if
// the parent process dies, so a crashed worker or test never leaks a server.
// One server at a time uses a database file ([ErrDBInUse]); a taken port is
// [ErrPortInUse]; a server that exits during startup is reported with its
// own last words.
//
// # Relation to testsuite.StartDevServer
//
// The Temporal Go SDK starts the same CLI with testsuite.StartDevServer. Where it
// fits, use it: a test that needs none of the above can start a server with
// testsuite.DevServerOptions{ExistingPath: bin} and bin from [Find]
// (TestSDKDevServerFromFind does). Start does not sit on it, because the SDK
// builds the *exec.Cmd itself and exposes neither it nor its process:
//
//   - the child's environment is the program's: there is no way to leave out
//     the program's OTEL_* variables, on which the server exits
//     (OTEL_TRACES_EXPORTER=console);
//   - there is no way to set the process attributes: no process group, no
//     SIGKILL on the parent's death;
//   - readiness is a client dial retried for up to a minute: a server that
//     exits during startup is noticed only at the timeout, without its last
//     words, and a dial cannot tell our server from another one that holds
//     the port (Start waits for the CLI's own "Server:" line first);
//   - Stop sends SIGINT to the process and waits without a bound; there is no
//     Kill, Done or exit status for a crash test.
//
// Its command line (--ip, --port, --namespace, --db-filename, --ui-port or
// --headless, --search-attribute, extra args) is the one Start builds, and
// its CachedDownload fetches a release binary over the network, where
// FindOrInstall builds the pinned version from the module cache.
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
//		SearchAttributes: []string{contracts.SearchAttributeSession, contracts.SearchAttributeWorkflow, contracts.SearchAttributeStatus},
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
