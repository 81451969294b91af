package integration_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// versionedWorker runs reg as build buildID of the worker deployment name, its runs pinned.
func versionedWorker(t *testing.T, tq, name, buildID string, broker stream.Broker, reg *workflows.Registry) worker.Worker {
	t.Helper()
	w := worker.New(tc, tq, worker.Options{DeploymentOptions: worker.DeploymentOptions{UseVersioning: true,
		Version:                   worker.WorkerDeploymentVersion{DeploymentName: name, BuildID: buildID},
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned}})
	workflows.NewRunner(reg).Register(w)
	set, err := tools.NewSet()
	require.NoError(t, err)
	(&activities.Activities{Stream: broker, Tools: set,
		Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false)).WithID("fake"))}).Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return w
}

// setCurrentVersion runs the command of docs/versioning.md, retried until the version's
// workers are known to the server.
func setCurrentVersion(t *testing.T, name, buildID string) {
	t.Helper()
	var out []byte
	var err error
	eventually(t, 30*time.Second, "set-current-version "+buildID, func() bool {
		out, err = exec.Command(tcliPath, "worker", "deployment", "set-current-version", "--deployment-name", name,
			"--build-id", buildID, "--yes", "--address", srv.Address()).CombinedOutput()
		return err == nil
	})
	require.NoError(t, err, string(out))
}

// Worker Deployment versioning on the dev server: a run started on build v1 stays on v1
// (pinned) after v2 becomes current, although v2's changed node would not replay it; a new
// run starts on v2.
func TestWorkerDeploymentPinsRuns(t *testing.T) {
	tq, name := taskQueue(t), "kortyx-"+taskQueue(t)
	ctx := context.Background()
	broker := stream.NewMemory(stream.MemoryOptions{})
	f := func(ctx context.Context, runID string, after int64, until stream.Until, fn func(int64, contracts.Chunk) error) error {
		return stream.Follow(ctx, broker, runID, after, until, func(en stream.Entry) error { return fn(en.Offset, en.Chunk) })
	}
	versionedWorker(t, tq, name, "v1", broker, pinnedGo(t, false, ""))
	setCurrentVersion(t, name, "v1")
	old := startRun(t, tc, tq, "pinned-go", "hi")
	resp, _ := nextResponse(t, f, old.GetID(), 0)
	ask, _ := interruptOf(t, resp)

	versionedWorker(t, tq, name, "v2", broker, pinnedGo(t, true, ""))
	setCurrentVersion(t, name, "v2")
	require.NoError(t, kortyx.Respond(ctx, tc, old.GetID(), answer(ask, "Ada")))
	res, err := result(t, old)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"one": "one", "name": "Ada"}, res.State.Data)
	require.Empty(t, workflowTaskFailures(t, old.GetID()), "v2 never replayed it")
	d, err := tc.DescribeWorkflow(ctx, old.GetID(), "")
	require.NoError(t, err)
	vi := d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.Equal(t, enums.VERSIONING_BEHAVIOR_PINNED, vi.GetBehavior())
	require.Equal(t, "v1", vi.GetDeploymentVersion().GetBuildId())

	fresh := startRun(t, tc, tq, "pinned-go", "hi")
	resp, _ = nextResponse(t, f, fresh.GetID(), 0)
	ask, _ = interruptOf(t, resp)
	require.NoError(t, kortyx.Respond(ctx, tc, fresh.GetID(), answer(ask, "Bo")))
	res, err = result(t, fresh)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"one": "one", "name": "Bo"}, res.State.Data)
	d, err = tc.DescribeWorkflow(ctx, fresh.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, "v2", d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion().GetBuildId())
}
