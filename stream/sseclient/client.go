package sseclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
)

// maxEventSize bounds the data of one server-sent event read by [ReadSSE].
const maxEventSize = 16 << 20

var doneData = []byte("[DONE]")

// ReadSSE parses a Kortyx server-sent event stream from r and calls fn for each event, with the
// event's id (0 if it has none: ids do not carry over between events) and its data decoded as a
// chunk. Events are separated by blank lines; the "data:" lines of an event are joined with
// "\n"; comments (lines starting with ':'), events without data and fields other than data and
// id are ignored.
//
// It returns nil at the "[DONE]" event, the error of fn as is, a *contracts.Error with code
// MALFORMED_STREAM for data that is not a JSON chunk with a type, an invalid id or an event
// larger than [maxEventSize], and a retryable *contracts.Error with code TRUNCATED_STREAM when
// the stream ends or fails to read before "[DONE]" (the read error is its cause).
func ReadSSE(r io.Reader, fn func(id int64, c contracts.Chunk) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\uFEFF" {
		_, _ = br.Discard(3) // a leading byte order mark is not part of the stream
	}
	var (
		data    []byte
		hasData bool
		id      int64
	)
	for {
		line, err := readLine(br, &data)
		if err != nil {
			return err
		}
		if len(line) == 0 { // end of event
			if hasData {
				if bytes.Equal(data, doneData) {
					return nil
				}
				var c contracts.Chunk
				if err := json.Unmarshal(data, &c); err != nil {
					return &contracts.Error{Code: contracts.CodeMalformedStream,
						Message: "stream: event data is not a JSON chunk: " + err.Error(), Err: err}
				}
				if c.Type == "" {
					return contracts.Errorf(contracts.CodeMalformedStream, "stream: chunk without type")
				}
				if err := fn(id, c); err != nil {
					return err
				}
			}
			data, hasData, id = data[:0], false, 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			if len(data) > maxEventSize {
				return contracts.Errorf(contracts.CodeMalformedStream,
					"stream: event larger than %d bytes", maxEventSize)
			}
		case "id":
			id = 0
			if len(value) > 0 {
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 {
					return contracts.Errorf(contracts.CodeMalformedStream, "stream: invalid event id %q", value)
				}
				id = n
			}
		}
	}
}

// readLine returns the next line of br without its line ending. Its result is only valid until
// the next call. A line may not be longer than [maxEventSize] plus a little; data holds the
// event being accumulated, to bound the two together.
func readLine(br *bufio.Reader, data *[]byte) ([]byte, error) {
	var long []byte
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := frag
			if long != nil {
				line = append(long, frag...)
			}
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, frag...)
			if len(long)+len(*data) > maxEventSize+64 {
				return nil, contracts.Errorf(contracts.CodeMalformedStream,
					"stream: event larger than %d bytes", maxEventSize)
			}
		case errors.Is(err, io.EOF):
			return nil, &contracts.Error{Code: contracts.CodeTruncatedStream,
				Message: "stream: ended before [DONE]", Retryable: true, Err: io.ErrUnexpectedEOF}
		default:
			return nil, &contracts.Error{Code: contracts.CodeTruncatedStream,
				Message: "stream: read failed before [DONE]: " + err.Error(), Retryable: true, Err: err}
		}
	}
}

// Defaults of [Client].
const (
	defaultMaxRetries = 5
	defaultRetryDelay = 100 * time.Millisecond
	maxRetryDelay     = 5 * time.Second
)

// Client follows run streams served by [Handler] over HTTP.
type Client struct {
	// BaseURL is the server's URL up to the handler's mount point, for example
	// "http://localhost:8080" (the client appends /v1/runs/{runID}/stream).
	BaseURL string
	// HTTP is the client used; nil means http.DefaultClient. Its Timeout, if any, bounds each
	// connection, which would cut long streams: prefer contexts.
	HTTP *http.Client
	// MaxRetries bounds the consecutive reconnections that deliver no new chunk; 0 means
	// defaultMaxRetries, a negative value disables reconnection.
	MaxRetries int
	// RetryDelay is the wait before the first reconnection without progress, doubled at each
	// further one (up to 5 s); 0 means defaultRetryDelay.
	RetryDelay time.Duration
}

// Follow streams the chunks of runID with offsets > after until the until condition holds
// (see [Follow]), calling fn with each chunk's offset, in order and exactly once.
//
// If the connection fails or drops before "[DONE]", Follow reconnects with the Last-Event-ID
// header set to the last offset seen, and skips any offset it already delivered. A connection
// that delivered a new chunk is retried at once; otherwise it waits RetryDelay (doubling) and
// gives up after MaxRetries consecutive attempts without progress, returning the last error
// (code TRUNCATED_STREAM for a dropped stream). An error reported in the stream by the server
// (an error chunk without id, when the server's broker fails) is retried the same way and
// returned as a *contracts.Error after the retries; it is not passed to fn.
//
// Other errors are returned at once: fn's error as is, ctx.Err() when ctx ends (always the
// case for [stream.UntilCancel]), a MALFORMED_STREAM *contracts.Error for an invalid stream, and for
// a non-200 response the server's error: a *contracts.Error with the failure of the JSON body
// when it has one, else an error containing the body's "error" message or the status.
func (c *Client) Follow(ctx context.Context, runID string, after int64, until stream.Until,
	fn func(id int64, c contracts.Chunk) error) error {
	if runID == "" {
		return contracts.Errorf(contracts.CodeInvalidRequest, "stream: empty run ID")
	}
	maxRetries := c.MaxRetries
	if maxRetries == 0 {
		maxRetries = defaultMaxRetries
	}
	delay := c.RetryDelay
	if delay <= 0 {
		delay = defaultRetryDelay
	}
	last := after
	sawDone := false
	failures := 0
	for attempt := 0; ; attempt++ {
		progressed := false
		var fnErr, srvErr error
		err := c.stream(ctx, runID, last, attempt > 0, until, func(id int64, ch contracts.Chunk) error {
			if id == 0 && ch.Type == contracts.ChunkError {
				srvErr = serverStreamError(ch)
				return nil
			}
			if id > 0 {
				if id <= last {
					return nil // already delivered before a reconnection
				}
				last = id
			}
			progressed = true
			if ch.Type == contracts.ChunkDone {
				sawDone = true
			}
			if err := fn(id, ch); err != nil {
				fnErr = err
				return err
			}
			return nil
		})
		switch {
		case fnErr != nil:
			return fnErr
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && srvErr == nil:
			return nil
		case err == nil:
		case contracts.CodeOf(err) != contracts.CodeTruncatedStream:
			var re *retryableError
			if !errors.As(err, &re) {
				return err
			}
			err = re.err
		}
		if srvErr != nil {
			err = srvErr
		}
		if until == stream.UntilResponse && sawDone {
			return nil // dropped between the done chunk and [DONE]
		}
		if progressed {
			failures = 0
			continue
		}
		failures++
		if maxRetries < 0 || failures > maxRetries {
			return err
		}
		d := delay << (failures - 1)
		if d > maxRetryDelay || d <= 0 {
			d = maxRetryDelay
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// retryableError marks a connection failure worth a reconnection.
type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

func serverStreamError(ch contracts.Chunk) error {
	if ch.Failure != nil && ch.Failure.Code != "" {
		return ch.Failure.Err()
	}
	msg := ch.Message
	if msg == "" {
		msg = "stream failed on the server"
	}
	return contracts.Errorf(contracts.CodeExecutionFailed, "stream: %s", msg)
}

// stream makes one connection and reads it with [ReadSSE].
func (c *Client) stream(ctx context.Context, runID string, after int64, resume bool, until stream.Until,
	fn func(int64, contracts.Chunk) error) error {
	u := strings.TrimSuffix(c.BaseURL, "/") + "/v1/runs/" + url.PathEscape(runID) + "/stream?" +
		url.Values{"after": {strconv.FormatInt(after, 10)}, "until": {until.String()}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	req.Header.Set(httpwire.ResumableHeader, "1")
	if resume && after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &retryableError{err: fmt.Errorf("stream: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return contracts.Errorf(contracts.CodeMalformedStream,
			"stream: unexpected content type %q", resp.Header.Get("Content-Type"))
	}
	return ReadSSE(resp.Body, fn)
}

// responseError turns a non-200 response into an error, from its JSON body if it has one.
func responseError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error   string             `json:"error"`
		Failure *contracts.Failure `json:"failure"`
	}
	if json.Unmarshal(body, &eb) == nil {
		if eb.Failure != nil && eb.Failure.Code != "" {
			e := eb.Failure.Err()
			if e.Message == "" {
				e.Message = eb.Error
			}
			if e.Status == 0 {
				e.Status = resp.StatusCode
			}
			return e
		}
		if eb.Error != "" {
			return fmt.Errorf("stream: server returned %s: %s", resp.Status, eb.Error)
		}
	}
	return fmt.Errorf("stream: server returned %s", resp.Status)
}
