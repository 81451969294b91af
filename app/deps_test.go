package app_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))
}

// Issue 10 item 3: the wiring compiles no example into a program, and the chat server example
// can be copied out of the module (it imports no internal package).
func TestWiringImportsNoExample(t *testing.T) {
	for _, p := range goList(t, "-deps", "github.com/kortyx-go/kortyx/app") {
		require.False(t, strings.HasPrefix(p, "github.com/kortyx-go/kortyx/examples"), "app depends on %s", p)
	}
	for _, p := range goList(t, "-f", `{{join .Imports "\n"}}`, "github.com/kortyx-go/kortyx/examples/chatserver/...") {
		require.NotContains(t, p, "github.com/kortyx-go/kortyx/internal/", "examples/chatserver imports %s", p)
	}
}
