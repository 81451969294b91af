package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// The answer schema every wire shows for a question (aisdk's kortyx_ask, A2A's data part,
// AG-UI's responseSchema), byte for byte.
func TestAnswerSchema(t *testing.T) {
	opts := []contracts.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}
	for _, tc := range []struct {
		in   contracts.InterruptInput
		want string // "": none
	}{
		{contracts.InterruptInput{Kind: contracts.InterruptText}, `{"minLength":1,"type":"string"}`},
		{contracts.InterruptInput{Kind: contracts.InterruptChoice, Options: opts}, `{"enum":["a","b"],"type":"string"}`},
		{contracts.InterruptInput{Kind: contracts.InterruptMultiChoice, Options: opts}, `{"items":{"enum":["a","b"],"type":"string"},"minItems":1,"type":"array","uniqueItems":true}`},
		{contracts.InterruptInput{Kind: contracts.InterruptCustom}, ""},
		{contracts.InterruptInput{Kind: "later", Options: opts}, ""},
	} {
		got := tc.in.AnswerSchema()
		if tc.want == "" {
			require.Nil(t, got, tc.in.Kind)
			continue
		}
		require.Equal(t, tc.want, string(got), tc.in.Kind)
	}
}
