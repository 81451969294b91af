package kortyxtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// ReplayOptions configure [Replay]. The zero value works for histories recorded from a
// Temporal server that records the workflow ID in the start event (the CLI's dev server does).
type ReplayOptions struct {
	// WorkflowID is the recorded run's workflow ID, which node code sees (stream ids, ids
	// derived from the run id). Default: the one in the history's first event.
	WorkflowID string
	// Register registers further workflows of your worker on the replayer, for histories of
	// workflow types other than the run and session workflows.
	Register func(worker.WorkflowRegistry)
	// Logger receives the replayer's logs. Default: none (what went wrong is the error Replay
	// returns).
	Logger log.Logger
	// DataConverter converts the history's payloads: the one of the workers that recorded it
	// when they used a payload codec (codec.DataConverter). Default: Temporal's.
	DataConverter converter.DataConverter
}

// Replay replays a recorded history against the workflows of reg as today's code runs them
// (the run and session workflows of [workflows.Runner], plus opts.Register's), the way a worker
// replays a run it picks up after a deployment. It returns nil when the code makes the same
// decisions the history recorded, and the replayer's error otherwise: a change that is not
// deterministic for runs in flight is reported as "[TMPRL1100] nondeterministic workflow: …".
// h is not modified, so the same history can be replayed again.
func Replay(reg *workflows.Registry, h *historypb.History, opts ReplayOptions) error {
	events := h.GetEvents()
	if len(events) == 0 {
		return contracts.Errorf(contracts.CodeInvalidInput,
			"kortyxtest.Replay: the history has no events; pass the JSON of `temporal workflow show -o json` (ReadHistory) or FetchHistory's result")
	}
	id := opts.WorkflowID
	if id == "" {
		id = events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	}
	if id == "" {
		return contracts.Errorf(contracts.CodeInvalidInput,
			"kortyxtest.Replay: the history does not record its workflow ID; set ReplayOptions.WorkflowID to the recorded run's ID")
	}
	logger := opts.Logger
	if logger == nil {
		logger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	}
	replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: opts.DataConverter})
	if err != nil {
		return fmt.Errorf("kortyxtest.Replay: creating the replayer: %w", err)
	}
	workflows.NewRunner(reg).Register(replayer)
	if opts.Register != nil {
		opts.Register(replayer)
	}
	// The replayer writes the search attributes the run upserts into the start event it reads:
	// a second replay of the same value would start from the end state of the first.
	h = proto.Clone(h).(*historypb.History)
	if err := replayer.ReplayWorkflowHistoryWithOptions(logger, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	}); err != nil {
		return fmt.Errorf("kortyxtest.Replay: replaying %s: %w", id, err)
	}
	return nil
}

// ReplayFile replays the history in the file at path, the JSON that
// `temporal workflow show --workflow-id <id> -o json` prints (see [ReadHistory]).
func ReplayFile(reg *workflows.Registry, path string, opts ReplayOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kortyxtest.ReplayFile: %w", err)
	}
	defer f.Close()
	h, err := ReadHistory(f)
	if err != nil {
		return fmt.Errorf("kortyxtest.ReplayFile: %s: %w", path, err)
	}
	return Replay(reg, h, opts)
}

// ReadHistory reads a history in Temporal's JSON form: the output of
// `temporal workflow show --workflow-id <id> -o json`, or a history marshalled with protojson.
func ReadHistory(r io.Reader) (*historypb.History, error) {
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	if err != nil {
		return nil, &contracts.Error{Code: contracts.CodeInvalidInput, Err: err,
			Message: "kortyxtest.ReadHistory: not a history in Temporal's JSON form (record one with `temporal workflow show --workflow-id <id> -o json`): " + err.Error()}
	}
	return h, nil
}

// FetchHistory reads the whole history of a workflow execution from the server
// (client.GetWorkflowHistory; runID "" is the latest run), for replaying a run of a test server.
func FetchHistory(ctx context.Context, c client.Client, workflowID, runID string) (*historypb.History, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("kortyxtest.FetchHistory: %s: %w", workflowID, err)
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}
