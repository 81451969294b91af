package chat

import (
	"context"
	"errors"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/temporalhealth"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// How the routes notice that Temporal is gone: a call still waiting after healthAfter gets a
// health check (bounded by temporalhealth.Timeout), then one every healthAfter; when one fails, the call
// is abandoned with TEMPORAL_UNAVAILABLE. Without this the SDK retries for up to a minute.
const (
	healthAfter = time.Second
)

// unavailable is the error of a call that Temporal did not answer (TEMPORAL_UNAVAILABLE).
func unavailable(cause error) *contracts.Error { return temporalhealth.Unavailable(cause) }

// temporalCall runs fn, which calls Temporal, and fails it with TEMPORAL_UNAVAILABLE when
// Temporal stops answering (see healthAfter) or fn's error says it is unreachable.
func temporalCall(ctx context.Context, c client.Client, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	done := make(chan struct{})
	go func() { err = fn(cctx); close(done) }()
	timer := time.NewTimer(healthAfter)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return classifyTemporal(ctx, err)
		case <-timer.C:
			if herr := temporalhealth.Check(ctx, c); herr != nil && ctx.Err() == nil {
				cancel()
				<-done // the call's own error no longer matters: Temporal is gone
				return herr
			}
			timer.Reset(healthAfter)
		}
	}
}

// classifyTemporal turns an error of a Temporal call that says the service is unreachable into
// TEMPORAL_UNAVAILABLE (when ctx, the caller's, is still live); other errors are returned as
// they are.
func classifyTemporal(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var ke *contracts.Error
	if errors.As(err, &ke) {
		return err
	}
	var gone *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	if errors.As(err, &gone) || errors.As(err, &deadline) {
		return unavailable(err)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return unavailable(err)
	}
	return err
}
