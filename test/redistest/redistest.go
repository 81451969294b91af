// Package redistest starts a real redis-server for tests: on a free port of 127.0.0.1, in a
// temporary directory, stopped by its PID when the test ends. It fails the test (never skips)
// when redis-server is not installed.
//
//	srv := redistest.Start(t, redistest.AppendOnly())
//	b, err := redisstream.New(ctx, redisstream.Options{URL: srv.URL()})
//	…
//	srv.Kill()    // SIGKILL
//	srv.Restart() // same port and directory; with AppendOnly the data is back
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds how long Start and Restart wait for the server to answer PING.
const readyTimeout = 15 * time.Second

// Option configures [Start].
type Option func(*config)

type config struct {
	appendOnly bool
}

// AppendOnly turns on persistence with the append-only file (--appendonly yes), so that data
// survives [Server.Kill] + [Server.Restart].
func AppendOnly() Option { return func(c *config) { c.appendOnly = true } }

// Server is a running redis-server.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cfg  config

	mu  sync.Mutex
	cmd *exec.Cmd
	out *syncWriter   // the server's output, shown when it fails to start
	end chan struct{} // closed when the process has exited
}

// Binary returns the redis-server to run: /usr/bin/redis-server, else redis-server on PATH.
func Binary() (string, error) {
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server is not installed (not /usr/bin/redis-server nor on PATH): install it with `apt-get install -y redis-server`")
	}
	return p, nil
}

// Start runs redis-server for t (--save "" and, unless [AppendOnly], no persistence) and
// waits until it answers PING. It fails the test when redis-server is missing or does not
// start. The server is stopped at the test's cleanup.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(&s.cfg)
	}
	t.Cleanup(s.Stop)
	var last error
	for range 3 { // the free port can be taken between choosing and binding it
		if s.port, err = freePort(); err != nil {
			t.Fatalf("redistest: no free port: %v", err)
		}
		if last = s.start(); last == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", last)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server on s.port and waits for it.
func (s *Server) start() error {
	appendOnly := "no"
	if s.cfg.appendOnly {
		appendOnly = "yes"
	}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", appendOnly, "--daemonize", "no", "--logfile", "")
	out := &syncWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	end := make(chan struct{})
	go func() { _ = cmd.Wait(); close(end) }()
	s.mu.Lock()
	s.cmd, s.out, s.end = cmd, out, end
	s.mu.Unlock()

	deadline := time.Now().Add(readyTimeout)
	for {
		if ping(s.Addr()) == nil {
			return nil
		}
		select {
		case <-end:
			return fmt.Errorf("redis-server exited at start on port %d:\n%s", s.port, s.output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.signal(syscall.SIGKILL)
			return fmt.Errorf("redis-server did not answer PING on %s within %s:\n%s", s.Addr(), readyTimeout, s.output())
		}
	}
}

// ping sends PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

func (s *Server) output() string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	return out.String()
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is redis://<addr>/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Dir is the server's data directory (it holds the append-only file with [AppendOnly]).
func (s *Server) Dir() string { return s.dir }

// signal sends sig to the process (if running) and waits for it to exit, SIGKILLing it after
// 10 s.
func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, end := s.cmd, s.end
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-end:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-end:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-end
	}
}

// Stop stops the server with SIGTERM (SIGKILL after 10 s) and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill stops the server with SIGKILL, as a crash would.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Restart stops the server if it runs and starts it again on the same port and directory: with
// [AppendOnly], the data written before is back. It fails the test if the server does not
// start.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// syncWriter serializes the writes of the server's stdout and stderr.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
