package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// gcNamespace registers a namespace of the test's own (the garbage collection reads every
// history of its namespace; the shared one holds runs encrypted with other tests' keys) and
// returns a client of it.
func gcNamespace(t *testing.T) (string, client.Client) {
	t.Helper()
	ns := fmt.Sprintf("kortyx-gc-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := tc.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	eventually(t, 30*time.Second, "the namespace and its search attributes", func() bool {
		return kortyx.RegisterSearchAttributes(ctx, c, ns) == nil && kortyx.CheckSearchAttributes(ctx, c, ns) == nil
	})
	return ns, c
}

func hashes(objs []codec.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Hash
	}
	sort.Strings(out)
	return out
}

// age sets the modification time of every stored object but keep to two hours ago.
func age(t *testing.T, dir string, keep ...string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, k := range keep {
			if d.Name() == strings.ReplaceAll(k, ":", "_") {
				return nil
			}
		}
		return os.Chtimes(p, old, old)
	}))
}

// Issue 13 item 1, garbage collection: objects referenced by a waiting run and by a closed run
// Temporal still keeps survive; an unreferenced object survives within the grace period and
// is deleted after it; --dry-run deletes nothing; once a run is deleted from Temporal, its
// objects go. The command is the starter's (payloads gc), run as a program.
func TestPayloadGC(t *testing.T) {
	ns, c := gcNamespace(t)
	e := startMsgrefWorker(t, c, 2, true)
	ctx := context.Background()

	// Run A waits at its second approval (its first result is stored); run B completes.
	waiting := startRun(t, c, e.tq, "msgref", "go")
	chunks, atA := nextResponse(t, e.follow, waiting.GetID(), 0)
	ask, _ := interruptOf(t, chunks)
	require.NoError(t, c.SignalWorkflow(ctx, waiting.GetID(), "", contracts.RespondName, answer(ask, "", "approve")))
	chunks, _ = nextResponse(t, e.follow, waiting.GetID(), atA)
	askA, _ := interruptOf(t, chunks)
	objsA := hashes(storeObjects(t, e.store))
	require.Len(t, objsA, 2, "A's two passes stored a prefix node each")

	done := startRun(t, c, e.tq, "msgref", "go")
	at := int64(0)
	for range 2 {
		chunks, at = nextResponse(t, e.follow, done.GetID(), at)
		ask, _ := interruptOf(t, chunks)
		require.NoError(t, c.SignalWorkflow(ctx, done.GetID(), "", contracts.RespondName, answer(ask, "", "approve")))
	}
	_, err := result(t, done)
	require.NoError(t, err)
	all := hashes(storeObjects(t, e.store))
	require.Len(t, all, 4, "A's two nodes (the first, the user message alone, is B's first too), two more of B's three passes")
	var objsB []string
	for _, h := range all {
		if h != objsA[0] && h != objsA[1] {
			objsB = append(objsB, h)
		}
	}
	require.Len(t, objsB, 2)

	// Two objects no run references: one stored two hours ago, one just now.
	cd, err := codec.New(codec.Options{Compress: true, Store: e.store})
	require.NoError(t, err)
	stale, err := cd.StoreBytes(ctx, []byte("stale, referenced by nothing"))
	require.NoError(t, err)
	age(t, e.storeDir)
	fresh, err := cd.StoreBytes(ctx, []byte("fresh, referenced by nothing"))
	require.NoError(t, err)

	res, err := codec.Collect(ctx, c, cd, codec.CollectOptions{Namespace: ns, Grace: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 2, res.Executions)
	require.Equal(t, all, hashes(res.Referenced), "the waiting run's and the closed run's objects are referenced")
	require.Equal(t, []string{fresh}, hashes(res.Fresh))
	require.Equal(t, []string{stale}, hashes(res.Deleted))
	require.ElementsMatch(t, append(append([]string(nil), all...), fresh), hashes(storeObjects(t, e.store)))

	// The starter's command, in the namespace, on the same store.
	starter := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t, "starter"), append([]string{"payloads", "gc"}, args...)...)
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "TEMPORAL_NAMESPACE="+ns, "KORTYX_PAYLOAD_STORE="+e.storeDir,
			"KORTYX_ROOT="+t.TempDir(), "KORTYX_CODEC_KEYS=", "KORTYX_REDIS_URL=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	// Run B is deleted from Temporal: once visibility no longer lists it, its objects go. (The
	// deletion is asynchronous: on the dev server it took about 80 s.)
	_, err = c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{Namespace: ns,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: done.GetID(), RunId: done.GetRunID()}})
	require.NoError(t, err)
	eventually(t, 120*time.Second, "visibility no longer lists the deleted run", func() bool {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns})
		return err == nil && len(page.GetExecutions()) == 1
	})
	age(t, e.storeDir, fresh)

	out := starter("--dry-run")
	for _, h := range objsB {
		require.Contains(t, out, "would delete "+h+" (")
	}
	require.Contains(t, out, "kept "+objsA[0]+" (")
	require.Contains(t, out, "kept "+objsA[1]+" (")
	require.Contains(t, out, "kept "+fresh+" (")
	require.Contains(t, out, "1 executions read; 3 objects kept (2 referenced, 1 within --grace); 2 would delete (")
	require.ElementsMatch(t, append(append([]string(nil), all...), fresh), hashes(storeObjects(t, e.store)), "--dry-run deletes nothing")

	out = starter("--grace", "1h")
	for _, h := range objsB {
		require.Contains(t, out, "deleted "+h+" (")
	}
	require.Contains(t, out, "1 executions read; 3 objects kept (2 referenced, 1 within --grace); 2 deleted (")
	require.ElementsMatch(t, []string{objsA[0], objsA[1], fresh}, hashes(storeObjects(t, e.store)))

	// The waiting run still completes: its reference resolves.
	require.NoError(t, c.SignalWorkflow(ctx, waiting.GetID(), "", contracts.RespondName, answer(askA, "", "approve")))
	_, err = result(t, waiting)
	require.NoError(t, err)
	_, failures := modelInputs(t, c, waiting.GetID())
	require.Empty(t, failures, "no reference was missing")
}
