package telemetry_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/test/testenv"
	"go.temporal.io/sdk/log"
)

// srv is the package's dev server: the chat test fails (never skips) when it cannot start.
var srv *devserver.Server

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	env, err := testenv.Start("the telemetry tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	srv = env.Server
	return m.Run()
}

func quietLogger() log.Logger { return testenv.QuietLogger() }
