package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// A call's own failures (a provider's 5xx, a tool's Retryable error) are counted apart from the
// attempts lost to dead workers and timeouts, which Temporal counts as attempts too. The count
// travels in the heartbeat details: an attempt that fails records it before it returns (the SDK
// sends the details before the failure), and a lost attempt's heartbeats carry the count it
// started with, so the next attempt reads the count of failures only. A local activity has no
// heartbeats; its attempts restart when its worker dies, so its attempt number is the count.

// callProgress is what the heartbeats of a tool call carry.
type callProgress struct {
	Failures int `json:"failures,omitempty"`
}

// priorToolFailures is the number of own failures of the earlier attempts of a tool call.
func priorToolFailures(ctx context.Context) int {
	if !activity.IsActivity(ctx) {
		return 0
	}
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity {
		return int(info.Attempt) - 1
	}
	var p callProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &p) == nil {
		return p.Failures
	}
	return 0
}

// failureCap is how one call caps its own failures.
type failureCap struct {
	max   int    // the cap (0: none)
	prior int    // own failures of the earlier attempts
	what  string // names the call in the status chunk ("db_query", "model openai:gpt-4.1")
	// runID and key: the stream of the status chunks and their key prefix (the chunk of
	// failure n is "<key>:<n>", so a repeated publish adds nothing); chunk carries the
	// attribution (node, ids).
	runID, key string
	chunk      contracts.Chunk
	// record stores the new count where the next attempt reads it.
	record func(n int)
}

// apply decides the retry of err, an error the call returned. A retryable ApplicationError is
// one more own failure: below the cap it is returned with its retry delay (the error's own, a
// provider's Retry-After, else the policy's backoff for that failure count), after recording
// the count and publishing a status chunk "<what> failed (attempt n of max), retrying in d";
// the failure that reaches the cap is returned as final (non-retryable, same type, message
// and details). Everything else (no cap, a cancellation, a timeout, a non-retryable error)
// comes back unchanged.
func (c failureCap) apply(ctx context.Context, a *Activities, err error) error {
	var ae *temporal.ApplicationError
	if c.max <= 0 || err == nil || ctx.Err() != nil || !errors.As(err, &ae) || ae.NonRetryable() {
		return err
	}
	n := c.prior + 1
	opts := temporal.ApplicationErrorOptions{Cause: errors.Unwrap(ae), Details: failureDetails(ae)}
	if n >= c.max {
		opts.NonRetryable = true
		return temporal.NewApplicationErrorWithOptions(ae.Message(), ae.Type(), opts)
	}
	delay := ae.NextRetryDelay()
	if delay <= 0 {
		delay = backoff(ctx, n)
	}
	opts.NextRetryDelay = delay
	c.record(n)
	if a.Stream != nil {
		ch := c.chunk
		ch.Type = contracts.ChunkStatus
		ch.Message = fmt.Sprintf("%s failed (attempt %d of %d), retrying in %s", c.what, n, c.max, seconds(delay))
		if perr := a.Stream.Publish(ctx, c.runID, stream.Keyed{Key: c.key + ":" + strconv.Itoa(n), Chunk: ch}); perr != nil {
			// The chunk is a view of the retry; the retry does not depend on it.
			activity.GetLogger(ctx).Warn("kortyx: publishing a retry's status chunk failed", "error", perr)
		}
	}
	return temporal.NewApplicationErrorWithOptions(ae.Message(), ae.Type(), opts)
}

// failureDetails are the details of a Kortyx error (its failure descriptor), kept on the
// error that replaces it.
func failureDetails(ae *temporal.ApplicationError) []any {
	var f contracts.Failure
	if ae.HasDetails() && ae.Details(&f) == nil {
		return []any{f}
	}
	return nil
}

// backoff is the delay before the retry after own failure n: the activity's retry policy
// (InitialInterval × BackoffCoefficient^(n-1), at most MaximumInterval), 1 s doubling without
// one.
func backoff(ctx context.Context, n int) time.Duration {
	initial, coef, maxDelay := time.Second, 2.0, time.Duration(0)
	if activity.IsActivity(ctx) {
		if p := activity.GetInfo(ctx).RetryPolicy; p != nil {
			if p.InitialInterval > 0 {
				initial = p.InitialInterval
			}
			if p.BackoffCoefficient >= 1 {
				coef = p.BackoffCoefficient
			}
			maxDelay = p.MaximumInterval
		}
	}
	f := float64(initial) * math.Pow(coef, float64(n-1))
	if maxDelay > 0 && f > float64(maxDelay) {
		return maxDelay
	}
	return time.Duration(min(f, float64(24*time.Hour)))
}

// seconds formats d in seconds, to a tenth: "4 s", "0.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + " s"
}
