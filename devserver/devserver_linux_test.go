package devserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary act as a parent process that starts
// children and then waits to be killed; its value is the temporal binary.
const helperEnv = "KORTYX_DEVSERVER_TEST_HELPER"

func TestMain(m *testing.M) {
	if bin := os.Getenv(helperEnv); bin != "" {
		os.Exit(runHelper(bin))
	}
	os.Exit(m.Run())
}

// runHelper starts a dev server and, with the same process attributes, a
// silent "sleep" (which, unlike the server, cannot die of SIGPIPE on a
// broken output pipe, so only Pdeathsig can end it). It prints both PIDs and
// blocks until stdin closes.
func runHelper(bin string) int {
	srv, err := Start(context.Background(), Options{BinaryPath: bin, UIPort: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = sysProcAttr()
	if err := sleeper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sleeper.Process.Kill()
	fmt.Printf("PIDS %d %d\n", srv.PID(), sleeper.Process.Pid)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// TestChildrenDieWithParent checks that a server (and anything started with
// the same process attributes) does not outlive a SIGKILLed parent.
func TestChildrenDieWithParent(t *testing.T) {
	t.Parallel()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), helperEnv+"="+temporalBinary(t))
	parent.Stderr = os.Stderr
	stdin, err := parent.StdinPipe() // keeps the helper blocked until killed
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "helper did not report its children's PIDs")
	var serverPID, sleeperPID int
	_, err = fmt.Sscanf(line, "PIDS %d %d", &serverPID, &sleeperPID)
	require.NoError(t, err, "helper said %q", line)
	pids := []int{serverPID, sleeperPID}
	t.Cleanup(func() { // in case the assertion fails
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for _, pid := range pids {
		require.True(t, alive(pid), "pid %d", pid)
	}

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still running 5s after its parent was killed", pid)
			}
			time.Sleep(pollInterval)
		}
	}
}

// alive reports whether pid exists and is not a zombie awaiting its reaper.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces or parens.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
