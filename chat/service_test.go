package chat

import (
	"testing"

	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/client"
)

// service is the session service a test's handlers share: Temporal client c and broker b (nil:
// none, as for the checkpoint route).
func service(t *testing.T, c client.Client, b stream.Broker) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Options{Client: c, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
