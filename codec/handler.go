package codec

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxRequest bounds a codec request body.
const maxRequest = 8 << 20

// HandlerOptions configure [Handler].
type HandlerOptions struct {
	// AllowOrigins are the browser origins (scheme://host:port) allowed to call the endpoint,
	// typically the Temporal UI's (http://127.0.0.1:8233 for the dev server); preflight requests
	// from them are answered. Empty: no CORS headers.
	AllowOrigins []string
	// Logger logs failed requests (nil: slog.Default()).
	Logger *slog.Logger
}

// Handler serves the Temporal codec server protocol for c (what the Temporal UI and
// `temporal --codec-endpoint` call): POST <prefix>/encode and POST <prefix>/decode with
// {"payloads":[...]} (Temporal's JSON form of payloads) answer the same shape. It has no
// authentication: anyone who reaches it can decrypt every payload, so put it behind your
// authentication in production.
func Handler(c converter.PayloadCodec, o HandlerOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(o.AllowOrigins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		var op func([]*commonpb.Payload) ([]*commonpb.Payload, error)
		switch {
		case strings.HasSuffix(r.URL.Path, "/encode"):
			op = c.Encode
		case strings.HasSuffix(r.URL.Path, "/decode"):
			op = c.Decode
		default:
			httpwire.WriteError(w, r, o.Logger, 0, contracts.Errorf(contracts.CodeNotFound, "Not found: the codec endpoint serves POST .../encode and POST .../decode."))
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			httpwire.WriteError(w, r, o.Logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST for %s.", r.URL.Path))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
		if err != nil {
			httpwire.WriteError(w, r, o.Logger, http.StatusRequestEntityTooLarge, contracts.Errorf(contracts.CodePayloadTooLarge, "The request body is over %d bytes.", maxRequest))
			return
		}
		var in commonpb.Payloads
		if err := protojson.Unmarshal(body, &in); err != nil {
			httpwire.WriteError(w, r, o.Logger, 0, contracts.Errorf(contracts.CodeInvalidRequest, `The body is not {"payloads":[...]} in Temporal's JSON form of payloads.`))
			return
		}
		out, err := op(in.Payloads)
		if err != nil {
			status := 0
			switch contracts.CodeOf(err) {
			case contracts.CodePayloadCodec:
				status = http.StatusBadRequest // the payloads sent cannot be decoded with this codec
			case contracts.CodePayloadMissing:
				status = http.StatusNotFound
			}
			httpwire.WriteError(w, r, o.Logger, status, err)
			return
		}
		b, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
		if err != nil {
			httpwire.WriteError(w, r, o.Logger, 0, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}
