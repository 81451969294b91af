package allproviders_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

// The support agent runs end to end on the google provider over a fake Gemini server playing
// its script (through the genai SDK and the Gemini wire), tool calls, approval and all.
func TestSupportAgentOnGoogle(t *testing.T) {
	srv := fakegemini.New(support.FakeModel())
	defer srv.Close()
	gp, err := google.New(context.Background(), google.Options{APIKey: "fake", BaseURL: srv.URL()})
	require.NoError(t, err)
	store := support.NewStore()
	shop, err := support.Tools(store)
	require.NoError(t, err)
	set, err := tools.NewSet(shop...)
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, support.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{Model: gp, DefaultModel: "gemini-2.5-flash", Tools: set})
	env.OnQuestion("", kortyxtest.Select("approve"))
	res, err := env.Run(support.WorkflowID, "Please refund order A-1001, it arrived broken.")
	require.NoError(t, err)
	require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", res.State.Data["answer"])
	require.Equal(t, 1, store.Refunds())
}
