package devserver

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
)

// moduleRoot walks up from the working directory to the directory with go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's working directory")
		}
		dir = parent
	}
}

// temporalBinary returns the CLI the tests run against; a missing CLI is a
// test failure, not a skip.
func temporalBinary(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	bin, err := Find(root)
	if err != nil {
		t.Fatalf("%v\ninstall it with: GOBIN=%s go install %s@%s", err, filepath.Join(root, ".tools", "bin"), cliModule, cliVersion)
	}
	return bin
}

// startServer starts a server for the test and stops it at cleanup.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.BinaryPath = temporalBinary(t)
	srv, err := Start(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Kill() }) // tests that care call Stop themselves
	return srv
}

func dial(t *testing.T, opts client.Options) client.Client {
	t.Helper()
	opts.Logger = nopLogger
	c, err := client.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestStartInMemoryWithSearchAttributes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Options{SearchAttributes: []string{"KortyxAgent", "KortyxRun"}})
	require.NotEmpty(t, srv.UIAddress())
	require.NotEqual(t, srv.Address(), srv.UIAddress())
	require.Equal(t, "default", srv.namespace)
	require.Positive(t, srv.PID())

	c, err := srv.Client(client.Options{Logger: nopLogger})
	require.NoError(t, err)
	defer c.Close()
	ctx := t.Context()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)

	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: srv.namespace})
	require.NoError(t, err)
	for _, name := range []string{"KortyxAgent", "KortyxRun"} {
		require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, resp.GetCustomAttributes()[name], name)
	}

	c2 := dial(t, client.Options{HostPort: srv.Address()})
	_, err = c2.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)

	// A second server on the same port must fail, not report the first one
	// as ready.
	_, portStr, err := net.SplitHostPort(srv.Address())
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	clash, err := Start(ctx, Options{BinaryPath: temporalBinary(t), Port: port, UIPort: -1})
	require.Nil(t, clash)
	require.ErrorContains(t, err, "address already in use")

	require.NoError(t, srv.Stop())
	select {
	case <-srv.Done():
	default:
		t.Fatal("Done not closed after Stop returned")
	}
	require.NoError(t, srv.Stop(), "second Stop must be a no-op")
	require.NoError(t, srv.Kill(), "Kill after Stop must be a no-op")
}

func TestPersistenceAcrossRestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "state", "temporal.db") // parent dir is created by Start
	opts := Options{DBFile: db, UIPort: -1, Namespace: "kortyx-test", SearchAttributes: []string{"KortyxAgent"}}
	const workflowID = "devserver-persistence-test"
	ctx := t.Context()

	srv := startServer(t, opts)
	require.Empty(t, srv.UIAddress())
	c := dial(t, client.Options{HostPort: srv.Address(), Namespace: srv.namespace})
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflowID, TaskQueue: "devserver-test"}, "KortyxNoSuchWorkflow")
	require.NoError(t, err)
	c.Close()
	require.NoError(t, srv.Stop())

	// Same file, fresh ports, same namespace and search attributes as on a
	// real dev-mode restart.
	srv = startServer(t, opts)
	c = dial(t, client.Options{HostPort: srv.Address(), Namespace: srv.namespace})
	desc, err := c.DescribeWorkflow(ctx, workflowID, "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.RawResponse.GetWorkflowExecutionInfo().GetStatus())
}

func TestStartFailsFastOnEarlyExit(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	srv, err := Start(t.Context(), Options{BinaryPath: temporalBinary(t), UIPort: -1, ExtraArgs: []string{"--no-such-flag"}})
	require.Nil(t, srv)
	// The server's own last line first, then the tail of its output; no guess at the cause.
	require.True(t, strings.HasPrefix(err.Error(), "kortyx: temporal dev server exited during startup (exit status 1): unknown flag: --no-such-flag\n--- temporal dev server output (tail) ---\n"), err.Error())
	require.NotContains(t, err.Error(), "DBFile")
	require.NotErrorIs(t, err, ErrPortInUse)
	require.Less(t, time.Since(begin), 5*time.Second)
}

// The program's OpenTelemetry variables are its own: a server started under
// OTEL_TRACES_EXPORTER=console (which the server does not support and would exit on) starts.
func TestStartWithoutTheProgramsOTELVariables(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	srv := startServer(t, Options{UIPort: -1})
	require.NoError(t, srv.Stop())

	require.Equal(t, []string{"PATH=/bin", "KORTYX_OTEL=1", "otel_x=1"},
		childEnv([]string{"OTEL_TRACES_EXPORTER=console", "PATH=/bin", "OTEL_SERVICE_NAME=w", "KORTYX_OTEL=1", "otel_x=1"}))
}

// A server that prints nothing before it exits says so.
func TestStartReportsASilentExit(t *testing.T) {
	t.Parallel()
	fake := filepath.Join(t.TempDir(), "temporal")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nexit 3\n"), 0o755))
	_, err := Start(t.Context(), Options{BinaryPath: fake, UIPort: -1})
	require.EqualError(t, err, "kortyx: temporal dev server exited during startup (exit status 3) without printing anything")
}

func TestStartTimesOut(t *testing.T) {
	t.Parallel()
	// A stand-in "server" that prints something and never listens.
	fake := filepath.Join(t.TempDir(), "temporal")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho fake server booting\nexec sleep 60\n"), 0o755))
	begin := time.Now()
	srv, err := Start(t.Context(), Options{BinaryPath: fake, ReadyTimeout: time.Second})
	require.Nil(t, srv)
	require.ErrorContains(t, err, "not ready within 1s")
	require.ErrorContains(t, err, "fake server booting")
	require.Less(t, time.Since(begin), 4*time.Second)
}

func TestStartRequiresBinaryPath(t *testing.T) {
	t.Parallel()
	_, err := Start(t.Context(), Options{})
	require.ErrorContains(t, err, "BinaryPath is empty")
}

func TestArgs(t *testing.T) {
	base := Options{Host: "127.0.0.1", Port: 7233, Namespace: "default", LogLevel: "error"}

	headless := base
	headless.UIPort = -1
	headless.DBFile = "/tmp/x.db"
	headless.SearchAttributes = []string{"KortyxAgent", "Score=Int"}
	headless.ExtraArgs = []string{"--http-port", "7243"}
	got := args(headless)
	want := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", "7233", "--log-level", "error", "--headless",
		"--db-filename", "/tmp/x.db",
		"--search-attribute", "KortyxAgent=Keyword", "--search-attribute", "Score=Int"}
	for _, kv := range TunedDynamicConfig() {
		want = append(want, "--dynamic-config-value", kv)
	}
	want = append(want, "--http-port", "7243")
	require.Equal(t, want, got)
	require.Contains(t, got, "history.transferProcessorMaxPollRPS=10000")
	require.Contains(t, got, "system.enableActivityEagerExecution=true")

	ui := base
	ui.UIPort = 8233
	ui.Namespace = "kortyx"
	ui.Untuned = true
	got = args(ui)
	require.Equal(t, []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", "7233", "--log-level", "error",
		"--ui-port", "8233", "--namespace", "kortyx"}, got)
	require.NotContains(t, got, "--dynamic-config-value")
	require.NotContains(t, got, "--headless")
}

func TestWithDefaults(t *testing.T) {
	o, err := Options{BinaryPath: "temporal", Host: "localhost"}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", o.Host)
	require.Equal(t, "default", o.Namespace)
	require.Equal(t, "error", o.LogLevel)
	require.Equal(t, 30*time.Second, o.ReadyTimeout)
	require.False(t, o.Untuned)

	_, err = Options{BinaryPath: "temporal", UIPort: -2}.withDefaults()
	require.ErrorContains(t, err, "invalid dev server ports")
}

// Find's order, on a project of the test's own (the checkout's .tools/bin may not exist: with
// TEMPORAL_CLI_PATH set, make installs nothing there): $TEMPORAL_CLI_PATH, <root>/.tools/bin,
// then $PATH.
func TestFind(t *testing.T) {
	exe := func(dir string) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := filepath.Join(dir, exeName("temporal"))
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
		return p
	}
	root := t.TempDir()
	local := exe(filepath.Join(root, ".tools", "bin"))
	onPath := t.TempDir()
	pathBin := exe(onPath)
	explicit := exe(t.TempDir())
	t.Setenv("PATH", onPath)

	t.Setenv(envCLIPath, "")
	got, err := Find(root)
	require.NoError(t, err)
	require.Equal(t, local, got, ".tools/bin before PATH")

	got, err = Find(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, pathBin, got, "PATH when the project has no .tools/bin")

	t.Setenv(envCLIPath, explicit)
	got, err = Find(root)
	require.NoError(t, err)
	require.Equal(t, explicit, got, "TEMPORAL_CLI_PATH before everything")

	t.Setenv(envCLIPath, filepath.Join(t.TempDir(), "missing"))
	_, err = Find(root)
	require.ErrorContains(t, err, envCLIPath)
	require.NotErrorIs(t, err, errNotFound, "a bad explicit path must not trigger an install")

	t.Setenv(envCLIPath, "")
	t.Setenv("PATH", t.TempDir())
	empty := t.TempDir()
	_, err = Find(empty)
	require.ErrorIs(t, err, errNotFound)
	require.ErrorContains(t, err, "go install "+cliModule+"@"+cliVersion)
	require.ErrorContains(t, err, "GOBIN="+filepath.Join(empty, ".tools", "bin"))
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defg", "hij"} {
		n, err := tb.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Equal(t, "cdefghij", tb.String())
	_, _ = tb.Write([]byte("0123456789"))
	require.Equal(t, "23456789", tb.String())
	require.True(t, slices.Equal([]byte("23456789"), tb.buf))
}

func TestStopReportsUnexpectedExit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Options{UIPort: -1})
	p, err := os.FindProcess(srv.PID())
	require.NoError(t, err)
	require.NoError(t, p.Kill()) // a crash that Server did not cause
	select {
	case <-srv.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the server process was killed")
	}
	require.ErrorContains(t, srv.Stop(), "had already exited")
	require.NoError(t, srv.Kill())
}

func TestOutputWriterBanner(t *testing.T) {
	w := &outputWriter{tail: &tailBuffer{max: 64}, banner: make(chan struct{})}
	closed := func() bool {
		select {
		case <-w.banner:
			return true
		default:
			return false
		}
	}
	for _, chunk := range []string{"CLI 0.0.0-DEV\n", "\nNot Server: x\nSer", "v"} {
		_, _ = w.Write([]byte(chunk))
		require.False(t, closed(), "after %q", chunk)
	}
	_, _ = w.Write([]byte("er:  localhost:7233\nServer: again\n"))
	require.True(t, closed())
	require.Contains(t, w.tail.String(), "localhost:7233")
}

// A port taken is noticed anywhere in the output — split across writes, and before a stack
// trace longer than the tail the error message keeps — so Start retries with other ports.
func TestOutputWriterNoticesPortInUse(t *testing.T) {
	w := &outputWriter{tail: &tailBuffer{max: tailSize}, banner: make(chan struct{})}
	_, _ = w.Write([]byte("listen tcp 127.0.0.1:7234: bind: address alr"))
	require.False(t, w.portInUse.Load())
	_, _ = w.Write([]byte("eady in use\npanic: "))
	_, _ = w.Write(bytes.Repeat([]byte("go.uber.org/dig.paramList.BuildList(...)\n"), 2*tailSize/40))
	require.True(t, w.portInUse.Load())
	require.NotContains(t, w.tail.String(), portInUseText, "the tail alone has lost it")

	other := &outputWriter{tail: &tailBuffer{max: tailSize}, banner: make(chan struct{})}
	_, _ = other.Write([]byte("panic: something else\n"))
	require.False(t, other.portInUse.Load())
}
