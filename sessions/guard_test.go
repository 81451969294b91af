package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// downClient is a Temporal client whose service is gone: health checks fail, updates wait
// until their context ends (as the SDK's retries of an unreachable service do), queries and
// describes fail with Unavailable.
type downClient struct {
	client.Client
}

func (downClient) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return nil, errors.New("dial tcp 127.0.0.1:7233: connection refused")
}

func (downClient) NewWithStartWorkflowOperation(client.StartWorkflowOptions, any, ...any) client.WithStartWorkflowOperation {
	return nil
}

func (downClient) UpdateWithStartWorkflow(ctx context.Context, _ client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (downClient) UpdateWorkflow(ctx context.Context, _ client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (downClient) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	return nil, serviceerror.NewUnavailable("connection refused")
}

func (downClient) DescribeWorkflow(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
	return nil, serviceerror.NewUnavailable("connection refused")
}

// Every call of the service that reaches Temporal fails with TEMPORAL_UNAVAILABLE (retryable,
// the cause not in the message) when Temporal is gone, within a health check rather than the
// SDK's minute of retries: the wires need not tell it apart themselves.
func TestTemporalUnavailable(t *testing.T) {
	svc, err := sessions.New(sessions.Options{Client: downClient{}})
	require.NoError(t, err)
	for name, call := range map[string]func(ctx context.Context) error{
		"Start": func(ctx context.Context) error {
			_, err := svc.Start(ctx, "s-1", sessions.TurnRequest{Workflow: "hello", Input: []byte(`"hi"`)})
			return err
		},
		"Answer": func(ctx context.Context) error {
			_, err := svc.Answer(ctx, "s-1", contracts.Response{Token: "tok", Text: "yes"}, sessions.AnswerOptions{})
			return err
		},
		"Stop": func(ctx context.Context) error { _, err := svc.Stop(ctx, "s-1", ""); return err },
		"Rollback": func(ctx context.Context) error {
			_, err := svc.Rollback(ctx, "s-1", "cp-1")
			return err
		},
		"View":       func(ctx context.Context) error { _, err := svc.View(ctx, "s-1"); return err },
		"Owner":      func(ctx context.Context) error { _, err := svc.Owner(ctx, "s-1"); return err },
		"Checkpoint": func(ctx context.Context) error { _, err := svc.Checkpoint(ctx, "s-1", "cp-1"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			// The deadline is the failure signal: without the health check the updates wait
			// until it ends, with the context's error.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := call(ctx)
			require.NoError(t, ctx.Err(), "the call waited until its deadline: %v", err)
			require.Equal(t, contracts.CodeTemporalUnavailable, contracts.CodeOf(err), "err: %v", err)
			f := contracts.FailureOf(err)
			require.True(t, f.Retryable)
			require.NotContains(t, f.Message, "connection refused")
		})
	}
}
