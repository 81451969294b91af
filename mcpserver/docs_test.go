package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// The example of docs/mcp-server.md, run for real: the page shows test/npmclients/mcpexample.mjs
// as it is, and its command, run against what `go run ./worker` runs (app.Run with every
// example, on the fake model), prints exactly the output the page shows.
func TestDocsExample(t *testing.T) {
	root, err := testenv.ModuleRoot()
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(root, "docs", "mcp-server.md"))
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(root, "test", "npmclients", "mcpexample.mjs"))
	require.NoError(t, err)
	require.Contains(t, string(page), "```js\n"+string(script)+"```\n", "the page shows the script as it is")
	m := regexp.MustCompile("(?s)```console\n\\$ (node test/npmclients/mcpexample\\.mjs http://127\\.0\\.0\\.1:8080/mcp (\\w+))\n(.*?)```\n").FindStringSubmatch(string(page))
	require.NotNil(t, m, "the page has the example's command and output")

	set, err := examples.Parse("")
	require.NoError(t, err)
	st := testenv.Run(t, context.Background(), app.Config{TemporalAddress: env.Server.Address(), TaskQueue: "mcp-docs-" + time.Now().Format("150405.000"),
		Namespace: "default", HTTPAddr: "127.0.0.1:0", FakeModels: true}, set.Options())
	nodeclient.Install(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "test/npmclients/mcpexample.mjs", "http://"+st.HTTPAddr+"/mcp", m[2])
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, m[3], string(out))
	require.True(t, strings.HasPrefix(m[1], "node "))
}
