// Package httpwire holds what every HTTP wire of Kortyx shares, so that a wire is one package
// over the session service (package sessions) and this one: the one error writer (JSON
// {error, failure} with the status of the failure's code, 5xx logged with their cause, no cause
// ever sent to a client), the wrapper that turns a mux's own 404 and 405 answers into such
// errors, bounded body reads, CORS, and the one writer of server-sent events in the Kortyx wire
// format ([SSEWriter]).
package httpwire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// ErrorBody is the JSON body of every error of the HTTP API.
type ErrorBody struct {
	Error   string            `json:"error"`
	Failure contracts.Failure `json:"failure"`
}

// Public is the failure descriptor a client is shown for err: [contracts.FailureOf] without
// its cause chain. Causes are the server's own (a store's address, an upstream's raw text):
// they go to the log, never to a client.
func Public(err error) contracts.Failure {
	f := contracts.FailureOf(err)
	f.Cause = nil
	return f
}

// StreamFailure is the error a client is shown when reading a run's stream failed with err:
// STREAM_UNAVAILABLE from the broker (whose message names its store's address) becomes one
// with a message of its own and err as its cause; other errors are returned as they are.
func StreamFailure(err error) error {
	if contracts.CodeOf(err) != contracts.CodeStreamUnavailable {
		return err
	}
	return &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Err: err,
		Message: "The stream store (Redis) did not answer; try again shortly."}
}

// ErrorChunk is the error chunk a route writes itself when err ends a stream it serves: the
// [Public] descriptor of [StreamFailure](err). The full error is logged on logger (nil:
// slog.Default()) with the run's id: at warn level for STREAM_GONE (the chunks are no longer
// kept, which a reader can meet without anything being wrong), else at error level.
func ErrorChunk(logger *slog.Logger, runID string, err error) contracts.Chunk {
	if logger == nil {
		logger = slog.Default()
	}
	if contracts.CodeOf(err) == contracts.CodeStreamGone {
		logger.Warn("kortyx http: the run's stream is gone", "run", runID, "error", err)
	} else {
		logger.Error("kortyx http: reading the run's stream failed", "run", runID, "error", errorText(err), "cause", causeText(err))
	}
	f := Public(StreamFailure(err))
	return contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}
}

// WriteError writes err as {error, failure} with the failure's HTTP status (status > 0
// overrides it). The body carries only the [Public] descriptor (its safe message, code and
// fields, never its cause); a 5xx is logged on logger (nil: slog.Default()) with the full
// error, its cause, the request's method and path (r may be nil), and so is the cause of a
// 4xx that has one. When the client left (r's context is done and err is context.Canceled)
// nothing is written and the request is logged at debug level only.
func WriteError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, status int, err error) {
	if r != nil && r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client left (a reload, a closed tab): nobody reads the answer, and nothing failed.
		if logger == nil {
			logger = slog.Default()
		}
		logger.Debug("kortyx http: the client left before the answer", "method", r.Method, "path", r.URL.Path)
		return
	}
	f := Public(err)
	if status == 0 {
		status = Status(f)
	}
	if cause := causeText(err); status >= 500 || cause != "" {
		if logger == nil {
			logger = slog.Default()
		}
		attrs := []any{"status", status, "code", f.Code, "error", errorText(err)}
		if cause != "" {
			attrs = append(attrs, "cause", cause)
		}
		if r != nil {
			attrs = append(attrs, "method", r.Method, "path", r.URL.Path)
		}
		if status >= 500 {
			logger.Error("kortyx http: request failed", attrs...)
		} else {
			logger.Info("kortyx http: request refused", attrs...)
		}
	}
	b, _ := json.Marshal(ErrorBody{Error: f.Message, Failure: f})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// JSONErrors serves mux, answering the requests that match none of its patterns (unknown
// paths: 404 NOT_FOUND; a path served only for other methods: 405 INVALID_REQUEST with the
// mux's Allow header) with JSON errors instead of the mux's text ones. Redirects to canonical
// paths are left to the mux.
func JSONErrors(mux *http.ServeMux, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusMethodNotAllowed:
			if allow := rec.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			WriteError(w, r, logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest,
				"Method %s is not allowed on %s; use %s.", r.Method, r.URL.Path, orList(rec.header.Get("Allow"))))
		case http.StatusNotFound, 0:
			WriteError(w, r, logger, http.StatusNotFound, contracts.Errorf(contracts.CodeNotFound, "No route for %s %s.", r.Method, r.URL.Path))
		default:
			// Not an answer of the mux's own (a redirect): pass it on as it is.
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.body)
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// causeText is the text of the cause of a *contracts.Error err ("" when it has none).
func causeText(err error) string {
	var ke *contracts.Error
	if errors.As(err, &ke) && ke.Err != nil {
		return errorText(ke.Err)
	}
	return ""
}

func orList(allow string) string {
	var out []string
	for _, m := range strings.Split(allow, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	switch len(out) {
	case 0:
		return "another method"
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
}

// recorder records the small answer of a mux's internal handler.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if len(r.body) < 4096 {
		r.body = append(r.body, b...)
	}
	return len(b), nil
}

// Status maps a descriptor to the HTTP status of an error response (spec F4.1): category
// request → 400 (404 for NOT_FOUND and UNKNOWN_WORKFLOW), provider → 502, persistence → 503,
// PAYLOAD_TOO_LARGE → 413, anything else → 500. A descriptor without category is mapped by its
// code's category.
func Status(f contracts.Failure) int {
	if f.Code == contracts.CodePayloadTooLarge {
		return http.StatusRequestEntityTooLarge
	}
	category := f.Category
	if category == "" {
		category = f.Code.Category()
	}
	switch category {
	case "request":
		if f.Code == contracts.CodeNotFound || f.Code == contracts.CodeUnknownWorkflow {
			return http.StatusNotFound
		}
		switch f.Code {
		case contracts.CodeSessionBusy, contracts.CodeClientTurnConflict:
			return http.StatusConflict
		case contracts.CodeUnauthorized:
			return http.StatusUnauthorized
		case contracts.CodeForbidden:
			return http.StatusForbidden
		case contracts.CodeStreamGone:
			return http.StatusGone
		}
		return http.StatusBadRequest
	case "provider":
		return http.StatusBadGateway
	case "persistence":
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// DefaultMaxBody is the request body limit of every wire (their MaxBodyBytes options' default).
const DefaultMaxBody = 1 << 20

// ReadBody reads r's body up to limit bytes, the one body rule of every wire: a larger body is
// INVALID_REQUEST "Request body is larger than <limit> bytes.", a body that cannot be read
// (the client left midway) INVALID_REQUEST without the reader's error text.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, contracts.Errorf(contracts.CodeInvalidRequest, "Request body is larger than %d bytes.", limit)
		}
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body could not be read.", Err: err}
	}
	return body, nil
}

// Refusal is what a wire does with its authorization hook's error err (nil: allowed): a
// *contracts.Error passes as it is (UNAUTHORIZED and FORBIDDEN refuse; another code, such as
// TEMPORAL_UNAVAILABLE from an ownership lookup, is that failure), any other error refuses
// with FORBIDDEN, its text kept as the cause for the log only. The same on every wire.
func Refusal(err error) error {
	var ke *contracts.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	return &contracts.Error{Code: contracts.CodeForbidden, Message: "Forbidden.", Err: err}
}
