package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// server is how the messages name the server.
const server = httperr.Server("the OpenAI-compatible server")

// Error codes and types of an exhausted quota: retrying cannot help.
var quotaCodes = map[string]bool{"insufficient_quota": true, "billing_hard_limit_reached": true}

// classify turns an error of go-openai or the HTTP client into the one error Generate returns.
// Cancellation of ctx is returned as ctx.Err(), never as a provider error.
func classify(ctx context.Context, err error, h *httperr.Capture, baseURL string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	attempted, status, header := h.Get()
	var (
		reqErr *goopenai.RequestError
		apiErr *goopenai.APIError
		urlErr *url.Error
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		// An error response whose body is not an OpenAI error object.
		msg := ""
		if errors.As(reqErr.Err, &apiErr) {
			msg = apiErr.Message
		} else {
			msg = httperr.Snippet(string(reqErr.Body))
		}
		return httpError(reqErr.HTTPStatusCode, msg, apiErr, header, err)
	case errors.As(err, &apiErr):
		// An error response (HTTPStatusCode set) or an error event in a stream (no status).
		if apiErr.HTTPStatusCode == 0 && status == 0 {
			return httpError(0, apiErr.Message, apiErr, nil, err)
		}
		st := apiErr.HTTPStatusCode
		if st == 0 {
			st = status
		}
		return httpError(st, apiErr.Message, apiErr, header, err)
	case !attempted:
		return server.NotSent(err)
	case errors.As(err, &urlErr):
		return server.Transport(baseURL, err)
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages), errors.Is(err, io.EOF):
		return server.InvalidResponse(baseURL, err.Error(), err)
	}
	return server.Transport(baseURL, err)
}

// httpError classifies an HTTP error status: retryable for 408, 409, 429 and 5xx, except for
// authentication failures and exhausted quotas. Status 0 is an error event inside a stream,
// retryable unless it names a bad request, an authentication failure or an exhausted quota.
func httpError(status int, providerMsg string, apiErr *goopenai.APIError, header http.Header, cause error) *contracts.Error {
	var code, typ string
	if apiErr != nil {
		typ = apiErr.Type
		switch c := apiErr.Code.(type) {
		case nil:
		case int: // go-openai decodes "code": null as 0
			if c != 0 {
				code = strconv.Itoa(c)
			}
		default:
			code = fmt.Sprint(c)
		}
	}
	quota := quotaCodes[code] || quotaCodes[typ]
	var retryable bool
	if status == 0 {
		retryable = !quota && !strings.Contains(typ, "invalid_request") &&
			!strings.Contains(typ, "authentication") && !strings.Contains(typ, "permission")
	} else {
		retryable = httperr.RetryableStatus(status)
		if quota || status == http.StatusUnauthorized || status == http.StatusForbidden {
			retryable = false
		}
	}

	var b strings.Builder
	if status == 0 {
		b.WriteString("OpenAI-compatible server reported an error in the stream")
	} else {
		fmt.Fprintf(&b, "OpenAI-compatible server returned %d %s", status, http.StatusText(status))
	}
	if providerMsg = strings.TrimSpace(providerMsg); providerMsg != "" {
		b.WriteString(": ")
		b.WriteString(providerMsg)
	}
	switch {
	case quota:
		b.WriteString(" (the account's quota is exhausted: check its plan and billing)")
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		b.WriteString(" (check the API key: " + EnvAPIKey + " or openai.Options.APIKey)")
	case status == http.StatusNotFound:
		b.WriteString(" (check the model id and the base URL)")
	}

	e := &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: status, Retryable: retryable,
		Message: b.String(), Err: cause}
	details := map[string]any{}
	if typ != "" {
		details["type"] = typ
	}
	if code != "" {
		details["code"] = code
	}
	if ms, ok := httperr.RetryAfterMs(header, time.Now()); ok {
		details["retryAfterMs"] = ms
	}
	if len(details) > 0 {
		e.Details = details
	}
	return e
}

func refusal(text string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "The model refused to answer: " + text,
		Details: map[string]any{"refusal": text}}
}
