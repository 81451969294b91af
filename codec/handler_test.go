package codec_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const uiOrigin = "http://127.0.0.1:8233"

func post(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", uiOrigin)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func payloadsJSON(t *testing.T, ps ...*commonpb.Payload) string {
	t.Helper()
	b, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
	require.NoError(t, err)
	return string(b)
}

func readPayloads(t *testing.T, w *httptest.ResponseRecorder) []*commonpb.Payload {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(w.Body.Bytes(), &out))
	return out.Payloads
}

func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error   string `json:"error"`
		Failure struct {
			Code string `json:"code"`
		} `json:"failure"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	return body.Failure.Code
}

func TestHandlerEncodeDecode(t *testing.T) {
	c := mustNew(t, codec.Options{Compress: true, Keys: map[string][]byte{"k1": key1}, KeyID: "k1"})
	h := codec.Handler(c, codec.HandlerOptions{AllowOrigins: []string{uiOrigin}})
	plain := jsonPayload(t, "user text")

	w := post(t, h, "/codec/encode", payloadsJSON(t, plain))
	enc := readPayloads(t, w)
	require.Len(t, enc, 1)
	require.Equal(t, encodingAESGCM, encoding(enc[0]))
	require.Equal(t, uiOrigin, w.Header().Get("Access-Control-Allow-Origin"))

	dec := readPayloads(t, post(t, h, "/codec/decode", payloadsJSON(t, enc[0], plain)))
	require.Len(t, dec, 2)
	require.True(t, proto.Equal(plain, dec[0]))
	require.True(t, proto.Equal(plain, dec[1]), "plain payloads pass through")
}

func TestHandlerErrors(t *testing.T) {
	c := mustNew(t, codec.Options{Keys: map[string][]byte{"k1": key1}, KeyID: "k1", Store: mustDir(t)})
	h := codec.Handler(c, codec.HandlerOptions{AllowOrigins: []string{uiOrigin}})

	w := post(t, h, "/codec/decode", `{"payloads": 3}`)
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "INVALID_REQUEST", errorCode(t, w))

	other := mustNew(t, codec.Options{Keys: map[string][]byte{"k9": key2}, KeyID: "k9"})
	enc, err := other.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	require.NoError(t, err)
	w = post(t, h, "/codec/decode", payloadsJSON(t, enc...))
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "PAYLOAD_CODEC_FAILED", errorCode(t, w))
	require.Contains(t, w.Body.String(), `k9`)

	missing := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte(encodingRef)}, Data: []byte("sha256:" + strings.Repeat("0", 64))}
	w = post(t, h, "/codec/decode", payloadsJSON(t, missing))
	require.Equal(t, http.StatusNotFound, w.Code)
	require.Equal(t, "PAYLOAD_MISSING", errorCode(t, w))

	w = post(t, h, "/codec/other", `{}`)
	require.Equal(t, http.StatusNotFound, w.Code)

	r := httptest.NewRequest(http.MethodGet, "/codec/decode", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Equal(t, "POST", w.Header().Get("Allow"))
}

func TestHandlerCORS(t *testing.T) {
	h := codec.Handler(mustNew(t, codec.Options{}), codec.HandlerOptions{AllowOrigins: []string{uiOrigin}})
	r := httptest.NewRequest(http.MethodOptions, "/codec/decode", nil)
	r.Header.Set("Origin", uiOrigin)
	r.Header.Set("Access-Control-Request-Method", "POST")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Equal(t, uiOrigin, w.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST, OPTIONS", w.Header().Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Content-Type, X-Namespace, Authorization", w.Header().Get("Access-Control-Allow-Headers"))

	// Another origin gets no CORS headers.
	r = httptest.NewRequest(http.MethodPost, "/codec/decode", strings.NewReader(`{"payloads":[]}`))
	r.Header.Set("Origin", "http://evil.example")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
}
