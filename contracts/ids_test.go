package contracts_test

import (
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestCheckID(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		want     string // "" when valid, else the message
	}{
		{"session uuid", "session-3f1c2a9e-8f5b-4a0c-9b8e-2f7d6c5b4a31", ""},
		{"run uuid", "run-3f1c2a9e-8f5b-4a0c-9b8e-2f7d6c5b4a31", ""},
		{"checkpoint uuid", "cp-3f1c2a9e-8f5b-4a0c-9b8e-2f7d6c5b4a31", ""},
		{"child run", "run-3f1c2a9e/research#2/topic-a/summarize#1/b", ""},
		{"email and punctuation", `alice@example.com:conv_1.2+x=y~z|!"$%&'()*,;<>?[\]^{}` + "`", ""},
		{"max length", strings.Repeat("a", contracts.MaxIDLength), ""},
		{"empty", "", "sessionId must not be empty"},
		{"too long", strings.Repeat("a", contracts.MaxIDLength+1), "sessionId must have at most 256 characters"},
		{"e acute", "caf\u00e9", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): 'é' at byte 3 is not allowed`},
		{"emoji", "s-\U0001F600", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '😀' at byte 2 is not allowed`},
		{"cjk", "会话", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '会' at byte 0 is not allowed`},
		{"nbsp", "a\u00a0b", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '\u00a0' at byte 1 is not allowed`},
		{"tab", "a\tb", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '\t' at byte 1 is not allowed`},
		{"space", "a b", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): ' ' at byte 1 is not allowed`},
		{"zero width", "a\u200bb", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '\u200b' at byte 1 is not allowed`},
		{"delete", "a\x7f", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '\x7f' at byte 1 is not allowed`},
		{"invalid utf-8", "a\xff", `sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): '�' at byte 1 is not allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := contracts.CheckID("sessionId", tc.id)
			if tc.want == "" {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			require.Equal(t, contracts.CodeInvalidRequest, err.Code)
			require.Equal(t, tc.want, err.Message)
			require.Equal(t, []contracts.Issue{{Path: []any{"sessionId"}, Code: "invalid_id", Message: tc.want}}, err.Issues)
		})
	}
}
