package chat_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/stretchr/testify/require"
)

func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		code contracts.Code
		want int
	}{
		{contracts.CodeInvalidRequest, http.StatusBadRequest},
		{contracts.CodeInvalidResume, http.StatusBadRequest},
		{contracts.CodeResumeMismatch, http.StatusBadRequest},
		{contracts.CodeNotFound, http.StatusNotFound},
		{contracts.CodeUnknownWorkflow, http.StatusNotFound},
		{contracts.CodeSessionBusy, http.StatusConflict},
		{contracts.CodeClientTurnConflict, http.StatusConflict},
		{contracts.CodeUnauthorized, http.StatusUnauthorized},
		{contracts.CodeForbidden, http.StatusForbidden},
		{contracts.CodeProviderHTTPError, http.StatusBadGateway},
		{contracts.CodeProviderRefusal, http.StatusBadGateway},
		{contracts.CodePersistenceError, http.StatusServiceUnavailable},
		{contracts.CodeChatLifecycleHookFailed, http.StatusServiceUnavailable},
		{contracts.CodeTemporalUnavailable, http.StatusServiceUnavailable},
		{contracts.CodeStreamUnavailable, http.StatusServiceUnavailable},
		{contracts.CodeStreamGone, http.StatusGone},
		{contracts.CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
		{contracts.CodeDomainError, http.StatusInternalServerError},
		{contracts.CodeExecutionFailed, http.StatusInternalServerError},
		{contracts.CodeActivityTimeout, http.StatusInternalServerError},
		{contracts.CodeSchemaValidation, http.StatusInternalServerError},
		{contracts.CodeMalformedStream, http.StatusInternalServerError},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			require.Equal(t, tc.want, httpwire.Status(contracts.Failure{Code: tc.code, Category: tc.code.Category()}))
			require.Equal(t, tc.want, httpwire.Status(contracts.FailureOf(contracts.Errorf(tc.code, "x"))))
		})
	}
	// The category decides; a descriptor without one is mapped by its code.
	require.Equal(t, http.StatusBadGateway, httpwire.Status(contracts.Failure{Code: contracts.CodeProviderHTTPError}))
	require.Equal(t, http.StatusBadRequest, httpwire.Status(contracts.Failure{Code: "APP_SPECIFIC", Category: "request"}))
}

// The statuses of some errors, as the routes answer them.
func TestHTTPStatusOfErrors(t *testing.T) {
	var got []string
	for _, err := range []error{
		contracts.Errorf(contracts.CodeInvalidInput, "Input is not valid."),
		contracts.Errorf(contracts.CodeUnknownWorkflow, `Workflow "x" not found.`),
		contracts.Errorf(contracts.CodeProviderHTTPError, "Provider returned 503."),
		contracts.Errorf(contracts.CodePersistenceError, "Store unavailable."),
		contracts.DomainError("OUT_OF_STOCK", "This item is out of stock.", nil),
		errors.New("anything else"),
	} {
		f := contracts.FailureOf(err)
		got = append(got, fmt.Sprint(httpwire.Status(f), " ", f.Code))
	}
	require.Equal(t, []string{"400 INVALID_INPUT", "404 UNKNOWN_WORKFLOW", "502 PROVIDER_HTTP_ERROR", "503 PERSISTENCE_ERROR",
		"500 DOMAIN_ERROR", "500 EXECUTION_FAILED"}, got)
}
