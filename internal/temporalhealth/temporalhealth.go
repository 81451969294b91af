// Package temporalhealth tells whether Temporal answers, for the routes (package chat) and the
// readiness check (package app).
package temporalhealth

import (
	"context"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/client"
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
