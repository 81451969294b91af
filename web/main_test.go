package web_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/test/testenv"
	"go.temporal.io/sdk/client"
)

// srv is the package's dev server and tc its client: the browser tests fail (never skip) when
// it cannot start.
var (
	srv *devserver.Server
	tc  client.Client
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	env, err := testenv.Start("the web tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	srv, tc = env.Server, env.Client
	return m.Run()
}
