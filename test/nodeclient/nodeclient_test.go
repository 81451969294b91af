package nodeclient_test

import (
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/stretchr/testify/require"
)

// The three official client libraries load on this machine's Node, and a script talks JSON lines
// both ways.
func TestScriptTalksJSONLines(t *testing.T) {
	p := nodeclient.Start(t, "selftest.mjs", nil)
	var ready struct {
		Node   string   `json:"node"`
		Loaded []string `json:"loaded"`
	}
	p.Expect("ready", time.Minute).Decode(t, &ready)
	require.Equal(t, []string{"function", "function", "function", "function", "function", "function"}, ready.Loaded)
	require.NotEmpty(t, ready.Node)
	p.Send(map[string]any{"n": 1})
	var echo struct {
		Value map[string]int `json:"value"`
	}
	p.Expect("echo", 10*time.Second).Decode(t, &echo)
	require.Equal(t, map[string]int{"n": 1}, echo.Value)
	p.Send("two")
	p.Expect("echo", 10*time.Second)
	p.CloseInput()
	p.Expect("bye", 10*time.Second)
	p.Wait(10 * time.Second)
}

// Without Node the protocol tests fail with a message that says what to install; they never skip.
func TestInstallWithoutNodeFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	require.Contains(t, nodeclient.InstallIn(nodeclient.Dir(t)), "node is not on PATH")
}
