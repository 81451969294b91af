// Package temporalhealth tells whether Temporal answers: for the session service's calls
// (package sessions, [Guard]) and the readiness check (package app).
package temporalhealth

import (
	"context"
	"errors"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Timeout bounds one health check.
const Timeout = 2 * time.Second

// Unavailable is the error of a call that Temporal did not answer: TEMPORAL_UNAVAILABLE (503),
// retryable; cause stays on the server.
func Unavailable(cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeTemporalUnavailable, Retryable: true, Err: cause,
		Message: "The workflow service (Temporal) is unavailable; try again shortly."}
}

// Check checks that Temporal answers, within [Timeout]: nil, or a TEMPORAL_UNAVAILABLE error
// (ctx.Err() when ctx ended).
func Check(ctx context.Context, c client.Client) error {
	hctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if _, err := c.CheckHealth(hctx, &client.CheckHealthRequest{}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return Unavailable(err)
	}
	return nil
}

// CheckAfter is how long [Guard] lets a call wait before it checks Temporal's health, and then
// the interval of the checks. Without it the SDK retries an unreachable service for up to a
// minute.
const CheckAfter = time.Second

// Guard runs fn, which calls Temporal, and fails it with TEMPORAL_UNAVAILABLE when Temporal
// stops answering (a call still waiting after [CheckAfter] gets a health check, bounded by
// [Timeout], then one every CheckAfter; when one fails, the call is abandoned) or when fn's
// error says it is unreachable ([Classify]).
func Guard(ctx context.Context, c client.Client, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	done := make(chan struct{})
	go func() { err = fn(cctx); close(done) }()
	timer := time.NewTimer(CheckAfter)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return Classify(ctx, err)
		case <-timer.C:
			if herr := Check(ctx, c); herr != nil && ctx.Err() == nil {
				cancel()
				<-done // the call's own error no longer matters: Temporal is gone
				return herr
			}
			timer.Reset(CheckAfter)
		}
	}
}

// Classify turns an error of a Temporal call that says the service is unreachable into
// TEMPORAL_UNAVAILABLE (when ctx, the caller's, is still live); other errors, and coded ones,
// are returned as they are.
func Classify(ctx context.Context, err error) error {
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
		return Unavailable(err)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return Unavailable(err)
	}
	return err
}
