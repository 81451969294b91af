package devserver

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// timeWait reports whether /proc/net/tcp lists a socket on local port port in TIME_WAIT.
func timeWait(t *testing.T, port int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	require.NoError(t, err)
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], suffix) && f[3] == "06" {
			return true
		}
	}
	return false
}

// The ports pickPorts chooses are left in TIME_WAIT, so that no other process's bind to port 0
// gets them before the server binds them, and the server can still bind them.
func TestPickedPortsWaitForTheServer(t *testing.T) {
	port, ui, err := pickPorts("127.0.0.1", 0, 0)
	require.NoError(t, err)
	require.NotEqual(t, port, ui)
	for _, p := range []int{port, ui} {
		require.True(t, timeWait(t, p), "port %d is not in TIME_WAIT", p)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err, "the server binds the port it was given")
		require.NoError(t, l.Close())
	}
}
