package devserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// TunedDynamicConfig returns the dynamic config values (KEY=VALUE, VALUE in
// JSON) that [Start] passes unless [Options.Untuned] is set (a new slice each call). On the project's
// machines they cut per-step workflow latency from ~100 ms to ~12 ms: task
// transfer is polled without rate limiting, each task queue has a single
// partition (so polls and adds always meet), and activities may run eagerly
// on the worker that scheduled them.
func TunedDynamicConfig() []string {
	return []string{
		"history.transferProcessorMaxPollRPS=10000",
		"history.transferProcessorMaxPollHostRPS=10000",
		"matching.numTaskqueueReadPartitions=1",
		"matching.numTaskqueueWritePartitions=1",
		"system.enableActivityEagerExecution=true",
	}
}

const (
	defaultHost         = "127.0.0.1"
	defaultNamespace    = "default"
	defaultLogLevel     = "error"
	defaultReadyTimeout = 30 * time.Second

	stopGrace     = 5 * time.Second
	pollInterval  = 50 * time.Millisecond
	probeTimeout  = time.Second
	tailSize      = 4 << 10
	startAttempts = 3 // only when ports are picked automatically
)

// Options configures [Start]. The zero value, plus BinaryPath, starts an
// in-memory server on free ports with the Web UI enabled.
type Options struct {
	// BinaryPath is the temporal binary, typically from [Find] or
	// [FindOrInstall]. Required.
	BinaryPath string
	// Host is the IP the frontend (and UI) binds to. Default 127.0.0.1;
	// "localhost" is treated as 127.0.0.1.
	Host string
	// Port is the frontend gRPC port; 0 picks a free port.
	Port int
	// UIPort is the Web UI port; 0 picks a free port and -1 disables the UI
	// (--headless).
	UIPort int
	// DBFile is the SQLite file that persists server state across restarts;
	// its parent directory is created. "" keeps state in memory. One server
	// at a time uses a file: on Unix, Start locks DBFile+".lock" until the
	// server exits and refuses a second server with [ErrDBInUse].
	DBFile string
	// Namespace is the namespace to create and serve. Default "default",
	// which the dev server always creates.
	Namespace string
	// SearchAttributes are custom search attributes to register, each as
	// Keyword. An entry of the form NAME=Type (e.g. "Score=Int") is passed
	// through with its own type.
	SearchAttributes []string
	// Untuned disables [TunedDynamicConfig].
	Untuned bool
	// LogLevel is the server log level: debug, info, warn, error or never.
	// Default "error".
	LogLevel string
	// Log receives the server's stdout and stderr; nil discards them. The
	// last 4 KiB are kept regardless and included in startup errors.
	Log io.Writer
	// ReadyTimeout bounds how long Start waits for the server to become
	// ready. Default 30s.
	ReadyTimeout time.Duration
	// ExtraArgs are appended to the "temporal server start-dev" arguments.
	ExtraArgs []string
}

// Server is a running dev server started by [Start]. Its methods are safe
// for concurrent use.
type Server struct {
	cmd       *exec.Cmd
	addr      string
	uiAddr    string
	namespace string
	out       *tailBuffer
	banner    chan struct{} // closed when the CLI prints its "Server:" line

	done     chan struct{} // closed once cmd.Wait returns
	waitErr  error         // valid after done is closed
	exitMu   sync.Mutex
	exited   bool        // cmd.Wait has returned
	onExit   func()      // runs after cmd.Wait returns, before done is closed (the DB lock's release)
	signaled atomic.Bool // Stop or Kill sent a signal
	stopOnce sync.Once
	stopErr  error
}

// Start starts "temporal server start-dev" as configured by opts and returns
// once the server has announced itself (the CLI's "Server:" line, which
// proves it owns the port) and its frontend is healthy and serves the
// namespace. ctx bounds only the startup: cancelling it later does not stop
// the server; call [Server.Stop]. If the server exits early, does not become
// ready within [Options.ReadyTimeout], or ctx ends first, the process is
// killed and the error includes the tail of its output. When no port is set
// explicitly, a start that loses a port race is retried with new ports. The server runs with
// the program's environment minus its OpenTelemetry variables (OTEL_*), which are the
// program's own settings: the server would apply them to itself, and exits on a value it does
// not support, such as OTEL_TRACES_EXPORTER=console.
func Start(ctx context.Context, opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	release := func() {}
	if o.DBFile != "" {
		// One server per database: a second one would fail midway with SQLITE_BUSY or a schema
		// "version mismatch"; this says at once who holds it.
		if release, err = lockDB(o.DBFile); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	autoPorts := opts.Port == 0 && opts.UIPort <= 0
	for attempt := 1; ; attempt++ {
		ro := o
		if ro.Port, ro.UIPort, err = pickPorts(o.Host, o.Port, o.UIPort); err != nil {
			release()
			return nil, err
		}
		s, portInUse, err := start(ctx, ro)
		if err == nil {
			// The lock ends with the process, before Stop, Kill and Done report the exit, so a
			// server restarted on the file right after finds it free.
			s.exitMu.Lock()
			if s.exited {
				release()
			} else {
				s.onExit = release
			}
			s.exitMu.Unlock()
			return s, nil
		}
		if !portInUse || !autoPorts || attempt == startAttempts {
			release()
			return nil, err
		}
	}
}

// ErrDBInUse is returned (wrapped) by [Start] when another dev server, of this process or
// another, uses the same [Options.DBFile]; the error is a [*DBInUseError].
var ErrDBInUse = errors.New("dev server database in use")

// DBInUseError is [Start]'s error when another dev server uses [Options.DBFile]; errors.Is
// matches it with [ErrDBInUse]. Programs use its fields to say it in their own terms.
type DBInUseError struct {
	DB  string // the database file
	PID int    // the process that started the server holding it (0: unknown)
}

func (e *DBInUseError) Error() string {
	by := "another process"
	if e.PID > 0 {
		by = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("kortyx: the dev server database %s is in use by another dev server, started by %s: stop that one (one server per database), or give this one another Options.DBFile, or \"\" for an in-memory database: %v", e.DB, by, ErrDBInUse)
}

// Is reports whether target is [ErrDBInUse].
func (e *DBInUseError) Is(target error) bool { return target == ErrDBInUse }

func dbInUse(db, holder string) error {
	pid, _ := strconv.Atoi(holder)
	return &DBInUseError{DB: db, PID: pid}
}

// withDefaults validates o, fills in defaults and creates the DB directory.
func (o Options) withDefaults() (Options, error) {
	if o.BinaryPath == "" {
		return o, errors.New("kortyx: devserver.Options.BinaryPath is empty; set it from devserver.Find or devserver.FindOrInstall")
	}
	if o.Host == "" || o.Host == "localhost" {
		o.Host = defaultHost
	}
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	if o.LogLevel == "" {
		o.LogLevel = defaultLogLevel
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	if o.Port < 0 || o.Port > 65535 || o.UIPort < -1 || o.UIPort > 65535 {
		return o, fmt.Errorf("kortyx: invalid dev server ports (Port=%d, UIPort=%d); use 0 for a free port and UIPort -1 for no UI", o.Port, o.UIPort)
	}
	if o.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o755); err != nil {
			return o, fmt.Errorf("kortyx: creating directory for dev server DB file: %w", err)
		}
	}
	return o, nil
}

// args returns the temporal command line for fully resolved options
// (defaults applied, ports chosen). UIPort 0 leaves the UI port to the CLI.
func args(o Options) []string {
	a := []string{"server", "start-dev",
		"--ip", o.Host,
		"--port", strconv.Itoa(o.Port),
		"--log-level", o.LogLevel,
	}
	switch {
	case o.UIPort < 0:
		a = append(a, "--headless")
	case o.UIPort > 0:
		a = append(a, "--ui-port", strconv.Itoa(o.UIPort))
	}
	if o.Namespace != "" && o.Namespace != defaultNamespace {
		a = append(a, "--namespace", o.Namespace)
	}
	if o.DBFile != "" {
		a = append(a, "--db-filename", o.DBFile)
	}
	for _, sa := range o.SearchAttributes {
		if !strings.Contains(sa, "=") {
			sa += "=Keyword"
		}
		a = append(a, "--search-attribute", sa)
	}
	if !o.Untuned {
		for _, kv := range TunedDynamicConfig() {
			a = append(a, "--dynamic-config-value", kv)
		}
	}
	return append(a, o.ExtraArgs...)
}

// start runs one attempt. portInUse reports that the server exited because
// a port was taken, so retrying with other ports may help.
func start(ctx context.Context, o Options) (s *Server, portInUse bool, err error) {
	s = &Server{
		addr:      net.JoinHostPort(dialHost(o.Host), strconv.Itoa(o.Port)),
		namespace: o.Namespace,
		out:       &tailBuffer{max: tailSize},
		banner:    make(chan struct{}),
		done:      make(chan struct{}),
	}
	if o.UIPort > 0 {
		s.uiAddr = net.JoinHostPort(dialHost(o.Host), strconv.Itoa(o.UIPort))
	}
	s.cmd = exec.Command(o.BinaryPath, args(o)...)
	s.cmd.Env = childEnv(os.Environ())
	s.cmd.SysProcAttr = sysProcAttr()
	// One comparable writer for both streams: exec then copies them through
	// a single pipe and goroutine, so Log sees no concurrent writes.
	w := &outputWriter{tail: s.out, log: o.Log, banner: s.banner}
	s.cmd.Stdout, s.cmd.Stderr = w, w
	s.cmd.WaitDelay = stopGrace
	if err := s.cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("kortyx: starting temporal dev server %q: %w", o.BinaryPath, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		s.exitMu.Lock()
		s.exited = true
		onExit := s.onExit
		s.exitMu.Unlock()
		if onExit != nil {
			onExit()
		}
		close(s.done)
	}()

	err = s.waitReady(ctx)
	if err == nil {
		return s, false, nil
	}
	select {
	case <-s.done:
		out := s.out.String()
		portInUse = w.portInUse.Load() || strings.Contains(out, portInUseText)
		err = exitError(s.waitErr, out, portInUse)
	default:
		_ = s.Kill()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("kortyx: temporal dev server at %s not ready within %s (last error: %w); raise Options.ReadyTimeout or check the server output below%s", s.addr, o.ReadyTimeout, err, formatTail(s.out.String()))
		} else {
			err = fmt.Errorf("kortyx: temporal dev server startup aborted: %w%s", err, formatTail(s.out.String()))
		}
	}
	return nil, portInUse, err
}

// ErrPortInUse is returned (wrapped) by [Start] when the server exited because a port it was
// to bind is taken (after the retries on other ports, when the ports were picked automatically).
var ErrPortInUse = errors.New("dev server port in use")

// exitError is the error of a server that exited during startup: its exit status and its own
// last words (the last line it printed, then the tail of its output), not a guess at the cause.
func exitError(waitErr error, out string, portInUse bool) error {
	last := lastLine(out)
	if portInUse {
		return fmt.Errorf("kortyx: temporal dev server exited during startup (%v): a port it was to bind is taken (%w): %s%s", waitErr, ErrPortInUse, last, formatTail(out))
	}
	if last == "" {
		return fmt.Errorf("kortyx: temporal dev server exited during startup (%v) without printing anything", waitErr)
	}
	return fmt.Errorf("kortyx: temporal dev server exited during startup (%v): %s%s", waitErr, last, formatTail(out))
}

// lastLine is the last non-blank line of out, trimmed.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// childEnv is the server's environment: the program's, without its OpenTelemetry variables
// (OTEL_*). Those configure the program's own telemetry; the Temporal server reads them too
// and, for a value it does not support (OTEL_TRACES_EXPORTER=console), refuses to start.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return out
}

// errNoBanner is the readiness error until the CLI prints its banner.
var errNoBanner = errors.New(`the server has not printed its "Server:" line yet`)

// waitReady waits until the process has printed its banner (so the port
// belongs to it, not to another server that happens to hold it) and then
// polls until the frontend answers health checks and describes the
// namespace. It fails when the process exits or ctx ends, returning the last
// probe error, or ctx's error if ctx was cancelled.
func (s *Server) waitReady(ctx context.Context) error {
	var c client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	err := errNoBanner
	banner := s.banner
	for {
		select {
		case <-banner:
			banner = nil // seen; from now on, probe
			if err = s.probe(ctx, &c); err == nil {
				return nil
			}
		case <-tick.C:
			if banner == nil {
				if err = s.probe(ctx, &c); err == nil {
					return nil
				}
			}
		case <-s.done:
			return err
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return err
		}
	}
}

// probe performs one readiness check, dialing *c once a plain TCP connect
// succeeds so that the SDK's own retries don't delay noticing an exit.
func (s *Server) probe(ctx context.Context, c *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if *c == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", s.addr)
		if err != nil {
			return err
		}
		_ = conn.Close()
		cl, err := client.DialContext(ctx, client.Options{HostPort: s.addr, Namespace: s.namespace, Logger: nopLogger,
			ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
		if err != nil {
			return err
		}
		*c = cl
	}
	if _, err := (*c).CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err := (*c).WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
	return err
}

var nopLogger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

// Address returns the frontend's host:port, for client.Options.HostPort.
func (s *Server) Address() string { return s.addr }

// UIAddress returns the Web UI's host:port, or "" if the server is headless.
func (s *Server) UIAddress() string { return s.uiAddr }

// PID returns the server's process ID (also its process group ID on Unix).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done returns a channel closed when the server process has exited, for
// whatever reason.
func (s *Server) Done() <-chan struct{} { return s.done }

// Client dials a client for the server, filling in opts.HostPort and
// opts.Namespace when they are empty. Its requests are not compressed unless
// opts.ConnectionOptions.GrpcCompression says otherwise: on loopback gzip costs
// CPU and saves nothing (the programs' default too, KORTYX_GRPC_COMPRESSION).
func (s *Server) Client(opts client.Options) (client.Client, error) {
	if opts.HostPort == "" {
		opts.HostPort = s.addr
	}
	if opts.ConnectionOptions.GrpcCompression == nil {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if opts.Namespace == "" {
		opts.Namespace = s.namespace
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("kortyx: dialing temporal dev server at %s: %w", opts.HostPort, err)
	}
	return c, nil
}

// Stop shuts the server down gracefully: SIGTERM to its process group, then
// SIGKILL if it has not exited within 5 s. It returns once the process has
// exited. Stop is idempotent; later calls return the first call's result.
// It returns an error if the server had already exited on its own with a
// failure, or if it could not be signalled.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.done:
		if !s.signaled.Load() && s.waitErr != nil {
			return fmt.Errorf("kortyx: temporal dev server had already exited: %w%s", s.waitErr, formatTail(s.out.String()))
		}
		return nil
	default:
	}
	s.signaled.Store(true)
	if err := terminate(s.cmd.Process); err != nil {
		return s.Kill()
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
		return s.Kill()
	}
}

// Kill sends SIGKILL to the server's process group at once, without a
// graceful shutdown (for crash tests), and waits for the process to exit.
// Killing an exited server is a no-op.
func (s *Server) Kill() error {
	s.signaled.Store(true)
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := kill(s.cmd.Process); err != nil {
		return fmt.Errorf("kortyx: killing temporal dev server (pid %d): %w", s.PID(), err)
	}
	<-s.done
	return nil
}

// pickPorts resolves 0 ports to free ones. All listeners stay open until
// every port is chosen, so the ports are distinct; the server binds them
// moments later (Start retries if another process wins the race). Each chosen
// port is left in TIME_WAIT (a connection to it, closed by the accepting
// side), as the CLI does for the ports it picks itself: for about a minute the
// kernel hands it to no other bind to port 0 (another dev server's internal
// services among them), while the server's own bind, with SO_REUSEADDR, takes
// it.
func pickPorts(host string, port, uiPort int) (int, int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			reserve(l)
			_ = l.Close()
		}
	}()
	free := func() (int, error) {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("kortyx: picking a free port on %s: %w", host, err)
		}
		ls = append(ls, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	var err error
	if port == 0 {
		if port, err = free(); err != nil {
			return 0, 0, err
		}
	}
	if uiPort == 0 {
		if uiPort, err = free(); err != nil {
			return 0, 0, err
		}
	}
	return port, uiPort, nil
}

// reserve puts l's port in TIME_WAIT on l's side (see pickPorts); best effort.
func reserve(l net.Listener) {
	c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }()
	accepted := make(chan net.Conn, 1)
	go func() {
		a, err := l.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- a
	}()
	select {
	case a := <-accepted:
		if a != nil {
			_ = a.Close() // the accepting side closes first: its socket keeps the port in TIME_WAIT
		}
	case <-time.After(time.Second):
	}
}

// dialHost maps a wildcard bind address to the loopback address to dial.
func dialHost(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			return "127.0.0.1"
		}
		return "::1"
	}
	return host
}

// outputWriter copies server output to the tail buffer and, best effort, to
// the user's log writer (a failing Log must not stall the server), and
// closes banner when a line starting with "Server:" appears. The CLI prints
// that line only after its own server has bound the frontend port.
type outputWriter struct {
	tail   *tailBuffer
	log    io.Writer
	banner chan struct{}
	seen   bool
	line   []byte // start of the current line, while !seen
	// portInUse: the output said a port was taken, anywhere in it (the tail may have lost the
	// line under a long stack trace); carry is the end of the last write, for a match across
	// writes.
	portInUse atomic.Bool
	carry     []byte
}

const portInUseText = "address already in use"

const bannerPrefix = "Server:"

func (w *outputWriter) Write(p []byte) (int, error) {
	_, _ = w.tail.Write(p)
	if !w.portInUse.Load() {
		joined := append(w.carry, p...)
		if bytes.Contains(joined, []byte(portInUseText)) {
			w.portInUse.Store(true)
		}
		w.carry = append(w.carry[:0], joined[max(0, len(joined)-len(portInUseText)+1):]...)
	}
	if w.log != nil {
		_, _ = w.log.Write(p)
	}
	for rest := p; !w.seen && len(rest) > 0; {
		chunk, after, eol := bytes.Cut(rest, []byte{'\n'})
		if room := len(bannerPrefix) - len(w.line); room > 0 {
			w.line = append(w.line, chunk[:min(room, len(chunk))]...)
		}
		if string(w.line) == bannerPrefix {
			w.seen = true
			close(w.banner)
		}
		if eol {
			w.line = w.line[:0]
		}
		rest = after
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if n >= t.max {
		p = p[n-t.max:]
		t.buf = t.buf[:0]
	} else if over := len(t.buf) + n - t.max; over > 0 {
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func formatTail(out string) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return "\n(the server printed nothing)"
	}
	return "\n--- temporal dev server output (tail) ---\n" + out
}
