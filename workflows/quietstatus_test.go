package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// statuses records the KortyxStatus values the run upserts, in order, each with the test time
// since the environment's start, in minutes.
func statuses(h *harness) *[]string {
	var out []string
	start := h.env.Now()
	key := temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeStatus)
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa, ok := args.Get(0).(temporal.SearchAttributes)
		if !ok {
			return
		}
		if v, ok := sa.GetKeyword(key); ok {
			out = append(out, fmt.Sprintf("%s@%dm", v, int(h.env.Now().Sub(start).Round(time.Minute).Minutes())))
		}
	}).Return(nil)
	return &out
}

// A run that ends in the workflow task that takes its answer upserts its final status alone (the
// first upsert is the test environment's start, where a client would set the attributes); a
// node that calls hooks.Flush before long work of its own (here an hour's sleep) is listed
// running from there (execution.QuietStatusVersion).
func TestQuietStatusAndFlush(t *testing.T) {
	ask := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{Options: []contracts.Option{{ID: "red"}, {ID: "blue"}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"color": a.Selected[0]}}, nil
	}
	work := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if err := hooks.Flush(ctx); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{}, workflow.Sleep(ctx, time.Hour)
	}
	for name, tc := range map[string]struct {
		def  *workflows.Definition
		want []string
	}{
		"ends after the answer": {def("w", map[string]workflows.NodeFunc{"pick": ask}, "__start__>pick"),
			[]string{"running@0m", "waiting@0m", "completed@1m"}},
		"works long after the answer": {def("w", map[string]workflows.NodeFunc{"pick": ask, "work": work}, "__start__>pick", "pick>work"),
			[]string{"running@0m", "waiting@0m", "running@1m", "completed@61m"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, tc.def)
			got := statuses(h)
			h.signalAt(time.Minute, selected("blue"))
			h.run("w", "x")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, tc.want, *got)
		})
	}
}
