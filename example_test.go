package kortyx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/client"
)

// These examples need a Temporal server and a worker running the workflows (go run ./worker),
// so they are compiled but not run.

// Start a run of the hello agent, wait for its question, answer it by update (an invalid answer
// is refused with a typed error, and nothing is recorded) and read the result.
func ExampleStartRun() {
	ctx := context.Background()
	c, err := client.Dial(client.Options{}) // localhost:7233
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	run, err := kortyx.StartRun(ctx, c, contracts.RunInput{Workflow: "hello"}, kortyx.StartOptions{})
	if err != nil {
		log.Fatal(err)
	}
	q, err := waitForQuestion(ctx, c, run.GetID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.Input.Question) // What is your name?

	_, err = kortyx.RespondAndWait(ctx, c, run.GetID(), "",
		contracts.Response{Token: q.Token, RequestID: q.RequestID, Text: "Ada"})
	if err != nil {
		log.Fatal(contracts.CodeOf(err), ": ", err) // e.g. INVALID_RESPONSE, RESUME_MISMATCH
	}
	var res contracts.RunResult
	if err := run.Get(ctx, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State.UI.Message) // Hello, Ada!
}

// waitForQuestion polls the run's state query until it waits for an answer, for at most a
// minute.
func waitForQuestion(ctx context.Context, c client.Client, runID string) (*contracts.PendingRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := kortyx.Query(ctx, c, runID)
		if err != nil {
			return nil, err
		}
		if v.Pending != nil {
			return v.Pending, nil
		}
		if v.Status != contracts.StatusRunning && v.Status != contracts.StatusWaiting {
			return nil, errors.New("the run ended without asking: " + string(v.Status))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// List the runs waiting for a human (through the visibility store: no worker needed) and
// cancel each question by signal.
func ExampleListWaiting() {
	ctx := context.Background()
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	waiting, err := kortyx.ListWaiting(ctx, c, "") // "" for every session
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range waiting {
		v, err := kortyx.Query(ctx, c, w.RunID)
		if err != nil || v.Pending == nil {
			continue // it ended or was answered meanwhile
		}
		err = kortyx.Respond(ctx, c, w.RunID, contracts.Response{Token: v.Pending.Token, RequestID: v.Pending.RequestID, Cancel: true})
		if err != nil {
			log.Printf("%s: %v", w.RunID, err)
		}
	}
}
