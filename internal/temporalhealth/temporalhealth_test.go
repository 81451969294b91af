package temporalhealth

import (
	"context"
	"errors"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// health is a client whose health check answers err (nil: healthy).
type health struct {
	client.Client
	err error
}

func (h health) CheckHealth(ctx context.Context, _ *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, h.err
}

func TestClassify(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	coded := contracts.Errorf(contracts.CodeInvalidSession, "no such session")
	plain := errors.New("boom")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want contracts.Code // "": returned as is
	}{
		{"nil", live, nil, ""},
		{"service error unavailable", live, serviceerror.NewUnavailable("connection refused"), contracts.CodeTemporalUnavailable},
		{"service error deadline", live, serviceerror.NewDeadlineExceeded("deadline"), contracts.CodeTemporalUnavailable},
		{"grpc unavailable", live, status.Error(codes.Unavailable, "down"), contracts.CodeTemporalUnavailable},
		{"grpc deadline", live, status.Error(codes.DeadlineExceeded, "slow"), contracts.CodeTemporalUnavailable},
		{"caller gone", cancelled, status.Error(codes.Unavailable, "down"), ""},
		{"coded", live, coded, ""},
		{"other", live, plain, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.ctx, tc.err)
			if tc.want == "" {
				require.Equal(t, tc.err, got)
				return
			}
			require.Equal(t, tc.want, contracts.CodeOf(got))
			require.True(t, contracts.FailureOf(got).Retryable)
			require.ErrorIs(t, got, tc.err, "the cause is kept for the logs")
		})
	}
}

func TestGuardGivesUpWhenTemporalIsDown(t *testing.T) {
	err := Guard(context.Background(), health{err: errors.New("connection refused")}, func(ctx context.Context) error {
		<-ctx.Done() // a call that would wait for Temporal forever
		return ctx.Err()
	})
	require.Equal(t, contracts.CodeTemporalUnavailable, contracts.CodeOf(err))
	require.NotContains(t, contracts.FailureOf(err).Message, "connection refused")
}

func TestGuardWaitsWhileTemporalAnswers(t *testing.T) {
	release := make(chan struct{})
	checks := 0
	c := countingHealth{n: &checks, after: 2, release: release}
	err := Guard(context.Background(), c, func(ctx context.Context) error {
		select {
		case <-release: // released by the second health check: the call outlived two of them
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	require.NoError(t, err)
	require.Equal(t, 2, checks)
}

// countingHealth is a healthy client that closes release at its after-th health check.
type countingHealth struct {
	client.Client
	n       *int
	after   int
	release chan struct{}
}

func (h countingHealth) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	*h.n++
	if *h.n == h.after {
		close(h.release)
	}
	return &client.CheckHealthResponse{}, nil
}
