package chat_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
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
			require.Equal(t, tc.want, chat.HTTPStatus(contracts.Failure{Code: tc.code, Category: tc.code.Category()}))
			require.Equal(t, tc.want, chat.HTTPStatus(contracts.Errorf(tc.code, "x").Failure()))
		})
	}
	// The category decides; a descriptor without one is mapped by its code.
	require.Equal(t, http.StatusBadGateway, chat.HTTPStatus(contracts.Failure{Code: contracts.CodeProviderHTTPError}))
	require.Equal(t, http.StatusBadRequest, chat.HTTPStatus(contracts.Failure{Code: "APP_SPECIFIC", Category: contracts.CategoryRequest}))
}

func ExampleHTTPStatus() {
	for _, err := range []error{
		contracts.Errorf(contracts.CodeInvalidInput, "Input is not valid."),
		contracts.Errorf(contracts.CodeUnknownWorkflow, `Workflow "x" not found.`),
		contracts.Errorf(contracts.CodeProviderHTTPError, "Provider returned 503."),
		contracts.Errorf(contracts.CodePersistenceError, "Store unavailable."),
		contracts.DomainError("OUT_OF_STOCK", "This item is out of stock.", nil),
		errors.New("anything else"),
	} {
		f := contracts.FailureOf(err)
		fmt.Println(chat.HTTPStatus(f), f.Code)
	}
	// Output:
	// 400 INVALID_INPUT
	// 404 UNKNOWN_WORKFLOW
	// 502 PROVIDER_HTTP_ERROR
	// 503 PERSISTENCE_ERROR
	// 500 DOMAIN_ERROR
	// 500 EXECUTION_FAILED
}
