package google

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// watch reads body through a finishWatcher one byte at a time (so every event and line is split
// across reads) and returns what the SDK would have read and the finishMessage recorded.
func watch(t *testing.T, body string, sse bool) (string, string) {
	t.Helper()
	return watchFrom(t, iotest.OneByteReader(strings.NewReader(body)), sse)
}

// watchFrom is watch over any reader (the bodies over the bound are read in larger pieces).
func watchFrom(t *testing.T, r io.Reader, sse bool) (string, string) {
	t.Helper()
	c := &capture{}
	w := &finishWatcher{rc: io.NopCloser(r), c: c, sse: sse}
	got, err := io.ReadAll(w)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return string(got), c.getFinishMessage()
}

func TestFinishWatcher(t *testing.T) {
	t.Run("stream events split across reads", func(t *testing.T) {
		body := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"finishMessage\"}]}}]}\r\n\r\n" +
			"data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"finishMessage\":\"Blocked.\"}]}\r\n\r\n"
		got, msg := watch(t, body, true)
		require.Equal(t, body, got, "the body passes through unchanged")
		require.Equal(t, "Blocked.", msg)
	})
	t.Run("a last event without a line end", func(t *testing.T) {
		_, msg := watch(t, `data: {"candidates":[{"finishMessage":"at EOF"}]}`, true)
		require.Equal(t, "at EOF", msg)
	})
	t.Run("the first candidate's only", func(t *testing.T) {
		_, msg := watch(t, `data: {"candidates":[{"index":0},{"index":1,"finishMessage":"second"}]}`+"\n", true)
		require.Empty(t, msg)
	})
	t.Run("an indented body", func(t *testing.T) {
		body := "{\n  \"candidates\": [\n    {\n      \"finishMessage\": \"Recited.\"\n    }\n  ]\n}\n"
		got, msg := watch(t, body, false)
		require.Equal(t, body, got)
		require.Equal(t, "Recited.", msg)
	})
	t.Run("an event over the bound is not looked at, the next one is", func(t *testing.T) {
		big := `data: {"candidates":[{"finishMessage":"big","content":{"parts":[{"text":"` + strings.Repeat("x", maxWatched) + `"}]}}]}` + "\n"
		_, msg := watchFrom(t, iotest.HalfReader(strings.NewReader(big)), true)
		require.Empty(t, msg)
		_, msg = watchFrom(t, iotest.HalfReader(strings.NewReader(big+`data: {"candidates":[{"finishMessage":"small"}]}`+"\n")), true)
		require.Equal(t, "small", msg)
	})
	t.Run("a body over the bound is not looked at", func(t *testing.T) {
		body := `{"candidates":[{"finishMessage":"big"}],"pad":"` + strings.Repeat("x", maxWatched) + `"}`
		_, msg := watchFrom(t, iotest.HalfReader(strings.NewReader(body)), false)
		require.Empty(t, msg)
	})
}
