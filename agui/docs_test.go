package agui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// TestDocsExample runs the commands of docs/agui.md's example against the dev API of a test
// worker (`go run ./worker` is this app.Run; `npm ci` is nodeclient.Install; example.mjs is the
// page's js block) and compares their output with the page, where "…" stands for any text.
func TestDocsExample(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(env.Root, "docs", "agui.md"))
	require.NoError(t, err)
	o, _ := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue()), o)
	nodeclient.Install(t)
	text := string(page)
	text = text[strings.Index(text, "## Example"):]
	var script string
	var ran []string
	for _, block := range strings.Split(text, "```")[1:] {
		if js, ok := strings.CutPrefix(block, "js\n"); ok {
			script = js
			continue
		}
		if !strings.HasPrefix(block, "\n$ ") {
			continue
		}
		lines := strings.Split(strings.TrimPrefix(block, "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			cmd, ok := strings.CutPrefix(lines[i], "$ ")
			if !ok {
				continue
			}
			var want []string
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				want = append(want, lines[i])
			}
			ran = append(ran, cmd)
			thread := uuid.NewString()
			var c *exec.Cmd
			switch cmd {
			case "go run ./worker", "cd test/npmclients && npm ci":
				continue // the test's worker; nodeclient.Install
			case "node example.mjs":
				require.NotEmpty(t, script, "the js block comes before the command")
				c = exec.Command("node", "--input-type=module")
				c.Stdin = strings.NewReader(strings.ReplaceAll(strings.ReplaceAll(script, "localhost:8080", st.HTTPAddr), "thread-1", thread))
			default:
				c = exec.Command("sh", "-c", strings.ReplaceAll(strings.ReplaceAll(cmd, "localhost:8080", st.HTTPAddr), "thread-1", thread))
			}
			c.Dir = nodeclient.Dir(t)
			b, err := c.CombinedOutput()
			require.NoError(t, err, "%s: %s", cmd, b)
			pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSpace(strings.Join(want, "\n"))), "…", ".*") + "$"
			require.Regexp(t, pattern, strings.TrimSpace(strings.ReplaceAll(string(b), thread, "thread-1")), cmd)
		}
	}
	require.Equal(t, []string{"go run ./worker", "cd test/npmclients && npm ci", "node example.mjs",
		`curl -sN localhost:8080/api/agui/hello -d '{"threadId":"thread-1","runId":"run-1","messages":[{"id":"m1","role":"user","content":"hi"}]}'`}, ran)
}
