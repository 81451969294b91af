package a2aserver_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
)

// wireService is the session service a test's handler is built on: Temporal client c, broker
// b, the agents of reg, task queue tq ("" for the default).
func wireService(t testing.TB, c client.Client, b stream.Broker, reg *workflows.Registry, tq string) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Options{Client: c, Broker: b, Agents: reg, TaskQueue: tq})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
