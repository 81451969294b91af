package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/stretchr/testify/require"
)

// The command that creates the search attributes (docs/running.md and the error of
// kortyx.CheckSearchAttributes): one --type per --name.
const createSearchAttributes = "temporal operator search-attribute create --namespace default" +
	" --name KortyxSession --type Keyword --name KortyxWorkflow --type Keyword --name KortyxStatus --type Keyword"

// A worker started on a namespace without the search attributes stops at once with an error
// that names them and the command that creates them; that command, run as the docs show it,
// creates all three.
func TestMissingSearchAttributesFailFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bare, err := devserver.Start(ctx, devserver.Options{BinaryPath: tcliPath, UIPort: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Kill() })
	c, err := dial(bare.Address())
	require.NoError(t, err)
	t.Cleanup(c.Close)

	err = kortyx.CheckSearchAttributes(ctx, c, "default")
	require.Error(t, err)
	require.Contains(t, err.Error(), `namespace "default" lacks the search attributes KortyxSession, KortyxWorkflow, KortyxStatus`)
	require.Contains(t, err.Error(), createSearchAttributes)

	// The "Your own worker" program of docs/running.md exits with that error.
	cmd := exec.CommandContext(ctx, binary(t, "ownworker"))
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+bare.Address())
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), createSearchAttributes)

	docs, err := os.ReadFile(filepath.Join(root, "docs", "running.md"))
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(strings.ReplaceAll(string(docs), "\\\n", " ")), " "), createSearchAttributes,
		"docs/running.md shows the command")

	args := append(strings.Fields(createSearchAttributes)[1:], "--address", bare.Address())
	out, err = exec.CommandContext(ctx, tcliPath, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, kortyx.CheckSearchAttributes(ctx, c, "default"))
}

// The "Your own worker" snippet of docs/running.md is examples/ownworker/main.go, which builds.
func TestOwnWorkerSnippetIsTheProgram(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join(root, "docs", "running.md"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(root, "examples", "ownworker", "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(docs), "```go\n"+string(src)+"```\n")
	binary(t, "ownworker")
}

// A namespace created without the search attributes (the dev server keeps them per namespace):
// CheckSearchAttributes names all three, RegisterSearchAttributes adds them, and the check then
// passes — what app.Run does on a self-hosted server.
func TestRegisterSearchAttributesOnANewNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := fmt.Sprintf("kortyx-sa-%d", time.Now().UnixNano()%1e9)
	out, err := exec.CommandContext(ctx, tcliPath, "operator", "namespace", "create", "--namespace", ns, "--address", srv.Address()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Eventually(t, func() bool { // the new namespace reaches the frontend's cache
		err = kortyx.CheckSearchAttributes(ctx, tc, ns)
		return err != nil && strings.Contains(err.Error(), "lacks the search attributes")
	}, 30*time.Second, 200*time.Millisecond)
	require.ErrorContains(t, kortyx.CheckSearchAttributes(ctx, tc, ns),
		fmt.Sprintf("namespace %q lacks the search attributes KortyxSession, KortyxWorkflow, KortyxStatus", ns))
	require.NoError(t, kortyx.RegisterSearchAttributes(ctx, tc, ns))
	require.NoError(t, kortyx.CheckSearchAttributes(ctx, tc, ns))
	require.NoError(t, kortyx.RegisterSearchAttributes(ctx, tc, ns), "a no-op when they exist")
}
