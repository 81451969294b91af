package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/bench/internal/proccpu"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// BenchmarkGrpcCompression: session turns (the prompt, its question, the answer, the next
// chunk) through sessions.Service on a stack whose one Temporal client (its worker's and its
// service's) compresses its requests with gzip, the Temporal SDK's default, beside the same
// stack without compression (the programs' default, KORTYX_GRPC_COMPRESSION=none), the two
// alternating b.N times per repetition. Reported per turn: the CPU of this process (the worker
// and the service), the dev server's, and the two latencies.
func BenchmarkGrpcCompression(b *testing.B) {
	e := setup(b)
	stacks := map[string]*compressionStack{}
	for _, name := range []string{"gzip", "none"} {
		s, err := e.compressionStack(name)
		if err != nil {
			b.Fatal(err)
		}
		stacks[name] = s
	}
	const turns = 20
	var got [2]compressionCost
	for range b.N {
		for i, name := range []string{"gzip", "none"} {
			c, err := stacks[name].measure(e, turns)
			if err != nil {
				b.Fatal(err)
			}
			got[i].add(c)
		}
	}
	for i, name := range []string{"gzip", "none"} {
		c := got[i].per(b.N * turns)
		b.ReportMetric(c.self, "ms-cpu-process/turn-"+name)
		b.ReportMetric(c.server, "ms-cpu-server/turn-"+name)
		fmt.Printf("GrpcCompression %s: %d turns, CPU per turn: this process %.2f ms, dev server %.2f ms; prompt→first chunk %.2f ms, answer→next chunk %.2f ms\n",
			name, b.N*turns, c.self, c.server, c.prompt, c.answer)
	}
	g, n := got[0].per(1), got[1].per(1)
	fmt.Printf("Ratio GrpcCompression none/gzip: process CPU %.2f, server CPU %.2f, prompt→first chunk %.2f, answer→next chunk %.2f\n",
		n.self/g.self, n.server/g.server, n.prompt/g.prompt, n.answer/g.answer)
}

// compressionStack is a worker and a sessions.Service on one client of one compression.
type compressionStack struct {
	svc *sessions.Service
}

// compressionCost sums (or, from per, averages) what turns cost, in ms.
type compressionCost struct{ self, server, prompt, answer float64 }

func (c *compressionCost) add(o compressionCost) {
	c.self += o.self
	c.server += o.server
	c.prompt += o.prompt
	c.answer += o.answer
}

func (c compressionCost) per(n int) compressionCost {
	f := float64(n)
	return compressionCost{c.self / f, c.server / f, c.prompt / f, c.answer / f}
}

// compressionStack starts a worker with the benchmark's definitions on a task queue of its own
// and a client that compresses with gzip ("gzip") or not ("none").
func (e *env) compressionStack(name string) (*compressionStack, error) {
	var comp client.GrpcCompression = &client.GrpcCompressionNone{}
	if name == "gzip" {
		comp = &client.GrpcCompressionGzip{}
	}
	c, err := e.srv.Client(client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: comp}})
	if err != nil {
		return nil, err
	}
	e.cleanups = append(e.cleanups, c.Close)
	queue, err := e.startTurnWorker(c, name, e.broker)
	if err != nil {
		return nil, err
	}
	svc, err := sessions.New(sessions.Options{Client: c, Broker: e.broker, TaskQueue: queue})
	if err != nil {
		return nil, err
	}
	return &compressionStack{svc: svc}, nil
}

// measure runs n turns of new sessions and returns what they cost together.
func (s *compressionStack) measure(e *env, n int) (compressionCost, error) {
	var c compressionCost
	self0, server0 := proccpu.Time(os.Getpid()), proccpu.Time(e.srv.PID())
	for range n {
		if err := s.turn(e, &c); err != nil {
			return c, err
		}
	}
	c.self = ms(proccpu.Time(os.Getpid()) - self0)
	c.server = ms(proccpu.Time(e.srv.PID()) - server0)
	return c, nil
}

// turn runs one turn of a new session: the prompt whose response asks a question, then the
// answer; it adds the two latencies to c.
func (s *compressionStack) turn(e *env, c *compressionCost) error {
	ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
	defer cancel()
	session := e.id("gz-session")
	start := time.Now()
	ts, err := s.svc.Start(ctx, session, sessions.TurnRequest{Workflow: kortyxInterrupt, Messages: []contracts.Message{{Role: "user", Content: "go"}}})
	if err != nil {
		return err
	}
	r, err := s.svc.Follow(ctx, session, ts, ts.Begin, sessions.FollowOptions{Started: true})
	if err != nil {
		return err
	}
	first := true
	for {
		en, err := r.Next(ctx)
		if err != nil {
			return err
		}
		if first {
			c.prompt += ms(time.Since(start))
			first = false
		}
		if en.Chunk.Type != contracts.ChunkInterrupt {
			continue
		}
		start = time.Now()
		ts, err := s.svc.Answer(ctx, session, contracts.Response{Token: en.Chunk.ResumeToken, RequestID: en.Chunk.RequestID, Value: []byte(`"yes"`)}, sessions.AnswerOptions{})
		if err != nil {
			return err
		}
		r2, err := s.svc.Follow(ctx, session, ts, ts.Begin, sessions.FollowOptions{Started: true})
		if err != nil {
			return err
		}
		if _, err := r2.Next(ctx); err != nil {
			return err
		}
		c.answer += ms(time.Since(start))
		return nil
	}
}
