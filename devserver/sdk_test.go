package devserver

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
)

// Where the SDK's dev server fits (doc.go): a test that needs nothing of Start's starts the CLI
// Find locates with testsuite.StartDevServer. Where it does not: under the program's
// OTEL_TRACES_EXPORTER=console, which its child inherits, the server exits, and the SDK notices
// only when its context ends, with a dial error rather than the server's words.
func TestSDKDevServerFromFind(t *testing.T) {
	bin := temporalBinary(t)
	opts := testsuite.DevServerOptions{ExistingPath: bin, ClientOptions: &client.Options{Logger: nopLogger}, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard}
	srv, err := testsuite.StartDevServer(t.Context(), opts)
	require.NoError(t, err)
	_, err = srv.Client().CheckHealth(t.Context(), &client.CheckHealthRequest{})
	require.NoError(t, err)
	srv.Client().Close()
	require.NoError(t, srv.Stop())

	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	begin := time.Now()
	_, err = testsuite.StartDevServer(ctx, opts)
	require.ErrorContains(t, err, "failed connecting after timeout")
	require.NotContains(t, err.Error(), "OTEL")
	require.GreaterOrEqual(t, time.Since(begin), 3*time.Second)

	// Start, with the same variable: the child runs without it.
	s, err := Start(t.Context(), Options{BinaryPath: bin, UIPort: -1})
	require.NoError(t, err)
	require.NoError(t, s.Stop())
}
