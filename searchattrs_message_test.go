package kortyx

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The error of a registration the server refuses names the missing attributes, the permission
// it needs, and the Temporal Cloud and self-hosted steps that add them by hand.
func TestSearchAttributeErrors(t *testing.T) {
	missing := []string{"KortyxSession", "KortyxStatus"}
	const cloud = "tcld namespace search-attributes add --namespace agents.acct42" +
		" --search-attribute KortyxSession=Keyword --search-attribute KortyxStatus=Keyword"
	const cli = "temporal operator search-attribute create --namespace agents.acct42" +
		" --name KortyxSession --type Keyword --name KortyxStatus --type Keyword"
	for _, tc := range []struct {
		name  string
		cause error
	}{
		{"permission denied", serviceerror.NewPermissionDenied("Request unauthorized.", "")},
		{"unimplemented", serviceerror.NewUnimplemented("AddSearchAttributes is not supported")},
		{"unauthenticated", status.Error(codes.Unauthenticated, "invalid API key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := missingError("agents.acct42", missing, tc.cause)
			require.ErrorIs(t, err, tc.cause)
			require.Equal(t, `kortyx: namespace "agents.acct42" lacks the search attributes KortyxSession, KortyxStatus, and this client may not add them: `+
				"adding search attributes needs the operator permission AddSearchAttributes on the namespace (a self-hosted server's admin; "+
				"on Temporal Cloud no SDK client can add them). Add them once, each of type Keyword: on Temporal Cloud in the Cloud UI "+
				"(Namespaces → agents.acct42 → Search Attributes) or with: "+cloud+"; on a self-hosted server with: "+cli+": "+tc.cause.Error(),
				err.Error())
		})
	}
	other := errors.New("connection reset")
	err := missingError("agents.acct42", missing, other)
	require.ErrorIs(t, err, other)
	require.Equal(t, `kortyx: namespace "agents.acct42" lacks the search attributes KortyxSession, KortyxStatus; create them (operator rights needed) with: `+
		cli+" (or kortyx.RegisterSearchAttributes): connection reset", err.Error())
	require.Equal(t, `kortyx: namespace "agents.acct42" lacks the search attributes KortyxSession, KortyxStatus; create them (operator rights needed) with: `+
		cli+" (or call kortyx.RegisterSearchAttributes)", missingError("agents.acct42", missing, nil).Error())
}
