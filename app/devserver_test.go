package app

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/devserver"
	"github.com/stretchr/testify/require"
)

// A dev-mode program's dev server errors in the program's terms: a second dev worker of one
// checkout is told who holds .kortyx/temporal.db and which variables give it a database and
// ports of its own (and those do start it); a taken port names KORTYX_DEV_PORT.
func TestDevServerErrorsInTheProgramsTerms(t *testing.T) {
	bin, err := devserver.Find(ConfigFromEnv().Root)
	require.NoError(t, err, "the Temporal CLI (make tools, or TEMPORAL_CLI_PATH)")
	t.Setenv("TEMPORAL_CLI_PATH", bin) // the checkout below has no .tools
	root := t.TempDir()
	t.Chdir(root)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Root: root, Namespace: "default", DevDB: "temporal.db", DevUIPort: -1}
	first, err := startDevServer(ctx, cfg, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Kill() })

	_, err = startDevServer(ctx, cfg, io.Discard)
	require.ErrorIs(t, err, devserver.ErrDBInUse)
	require.EqualError(t, err, "kortyx: another dev worker uses the dev server database "+filepath.Join(".kortyx", "temporal.db")+
		": stop it (Ctrl-C where it runs, or kill "+strconv.Itoa(os.Getpid())+"), or give this one a database of its own and free ports: "+
		"KORTYX_DEV_DB=second.db KORTYX_DEV_PORT=0 KORTYX_DEV_UI_PORT=0 KORTYX_HTTP_ADDR=127.0.0.1:0 (or set TEMPORAL_ADDRESS to use a running Temporal server): dev server database in use")
	require.NotContains(t, err.Error(), "Options")

	// What the message suggests works: the variables, read as a program reads them.
	for k, v := range map[string]string{"KORTYX_DEV_DB": "second.db", "KORTYX_DEV_PORT": "0", "KORTYX_DEV_UI_PORT": "0", "KORTYX_ROOT": root,
		"TEMPORAL_ADDRESS": "", "TEMPORAL_CONFIG_FILE": filepath.Join(root, "none.toml")} {
		t.Setenv(k, v)
	}
	second := ConfigFromEnv()
	require.NoError(t, second.Err())
	require.True(t, second.devMode())
	srv, err := startDevServer(ctx, second, io.Discard)
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	_, err = os.Stat(filepath.Join(root, ".kortyx", "second.db"))
	require.NoError(t, err)

	// A taken port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg.DevDB, cfg.DevPort = "third.db", ln.Addr().(*net.TCPAddr).Port
	_, err = startDevServer(ctx, cfg, io.Discard)
	require.ErrorIs(t, err, devserver.ErrPortInUse)
	require.ErrorContains(t, err, "kortyx: starting the Temporal dev server: port "+strconv.Itoa(cfg.DevPort)+" (KORTYX_DEV_PORT) is taken; set another (0: any free port), or TEMPORAL_ADDRESS to use a running server: ")

	t.Setenv("KORTYX_DEV_DB", "../elsewhere.db")
	require.EqualError(t, ConfigFromEnv().Err(), `kortyx: KORTYX_DEV_DB="../elsewhere.db": use a file name (it is kept in .kortyx/), such as second.db`)
}
