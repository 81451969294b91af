package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/shared"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// statusOverloaded is Anthropic's status for an overloaded API (retryable).
const statusOverloaded = 529

// server is how the messages name the server.
const server = httperr.Server("the Anthropic API")

var errStreamCut = errors.New("the stream ended before message_stop")

// classify turns an error of the SDK or the HTTP client into the one error Generate returns.
// Cancellation of ctx is returned as ctx.Err(), never as a provider error.
func classify(ctx context.Context, err error, h *capture, baseURL string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	attempted, header := h.get()
	var (
		apiErr *sdk.Error
		urlErr *url.Error
		netErr net.Error
	)
	switch {
	case errors.As(err, &apiErr):
		return httpError(apiErr, header, err)
	case !attempted:
		return server.NotSent(err)
	case errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return server.Transport(baseURL, err)
	case header != nil:
		// A response arrived but could not be read as the API's.
		return server.InvalidResponse(baseURL, err.Error(), err)
	}
	return server.Transport(baseURL, err)
}

// retryableTypes are the error types of failures that a later attempt can get past (they
// decide an error event inside a stream, whose HTTP status was 200).
var retryableTypes = map[shared.ErrorType]bool{
	shared.ErrorTypeRateLimitError:  true,
	shared.ErrorTypeOverloadedError: true,
	shared.ErrorTypeAPIError:        true,
	shared.ErrorTypeTimeoutError:    true,
}

// httpError classifies an error response of the API: retryable for 408, 409, 429, 5xx and 529
// (overloaded), never for 400, 401, 403, 404 or 413. An error event inside a stream (status
// 200) is classified by its type and has Status 0.
func httpError(e *sdk.Error, header http.Header, cause error) *contracts.Error {
	status := e.StatusCode
	typ := e.Type()
	inStream := status >= 200 && status < 300
	var retryable bool
	if inStream {
		status = 0
		retryable = retryableTypes[typ]
	} else {
		retryable = httperr.RetryableStatus(status)
	}

	var b strings.Builder
	if inStream {
		b.WriteString("The Anthropic API reported an error in the stream")
	} else {
		fmt.Fprintf(&b, "Anthropic API returned %d %s", status, statusText(status))
	}
	msg := strings.TrimSpace(e.Message)
	if msg == "" && !inStream {
		msg = httperr.Snippet(e.RawJSON())
	}
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || typ == shared.ErrorTypeAuthenticationError || typ == shared.ErrorTypePermissionError:
		b.WriteString(" (check the API key: " + EnvAPIKey + " or anthropic.Options.APIKey)")
	case status == http.StatusNotFound || typ == shared.ErrorTypeNotFoundError:
		b.WriteString(" (check the model id and the base URL)")
	case typ == shared.ErrorTypeBillingError:
		b.WriteString(" (check the account's plan and billing)")
	}

	out := &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: status, Retryable: retryable,
		Message: b.String(), Err: cause}
	details := map[string]any{}
	if typ != "" {
		details["type"] = string(typ)
	}
	if e.RequestID != "" {
		details["requestId"] = e.RequestID
	}
	h := header
	if e.Response != nil {
		h = e.Response.Header
	}
	if ms, ok := httperr.RetryAfterMs(h, time.Now()); ok && retryable {
		details["retryAfterMs"] = ms
	}
	if len(details) > 0 {
		out.Details = details
	}
	return out
}

func statusText(status int) string {
	if status == statusOverloaded {
		return "Overloaded"
	}
	return http.StatusText(status)
}

// refusal is the error of a pass the model refused (stop_reason "refusal"), with the API's
// explanation and policy category when it gives them.
func refusal(explanation, category string) *contracts.Error {
	msg := "The model refused to answer"
	if explanation != "" {
		msg += ": " + explanation
	} else if category != "" {
		msg += " (policy category " + category + ")"
	} else {
		msg += "."
	}
	details := map[string]any{"refusal": explanation}
	if category != "" {
		details["category"] = category
	}
	return &contracts.Error{Code: contracts.CodeProviderRefusal, Message: msg, Details: details}
}
