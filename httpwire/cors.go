package httpwire

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// CORS lets browser apps on other origins call a route; a nil *CORS is off. Every wire's CORS
// option is this type (chat.CORS is an alias), so that one set of origins means the same on
// each of them.
//
// A preflight request (OPTIONS with Origin and Access-Control-Request-Method) from an allowed
// origin is answered 204 with Access-Control-Allow-Origin (the origin), -Allow-Methods (the
// route's methods and OPTIONS), -Allow-Headers, -Max-Age and, with AllowCredentials,
// -Allow-Credentials: true; from another origin it is refused 403 FORBIDDEN. An actual request
// from an allowed origin gets Access-Control-Allow-Origin (and -Allow-Credentials); one from
// another origin is served without them, so the browser does not let the page read it. Every
// answer to a request with an Origin header carries Vary: Origin.
type CORS struct {
	// AllowedOrigins are the origins allowed, exactly as browsers send them
	// ("https://app.example.com"); "*" allows any origin, and an origin whose port is "*"
	// ("http://localhost:*") allows that scheme and host on any port (and on none).
	AllowedOrigins []string
	// AllowCredentials lets the page send cookies and HTTP authentication.
	AllowCredentials bool
	// AllowedHeaders are the request headers a page may send (default: Content-Type,
	// Authorization, Last-Event-ID and X-Kortyx-Resumable).
	AllowedHeaders []string
	// MaxAge is how long a browser may cache a preflight answer (default 10 minutes).
	MaxAge time.Duration
}

// defaultCORSHeaders returns the request headers [CORS] allows when AllowedHeaders is empty.
func defaultCORSHeaders() []string {
	return []string{"Content-Type", "Authorization", "Last-Event-ID", ResumableHeader}
}

func (c *CORS) allows(origin string) bool {
	return slices.ContainsFunc(c.AllowedOrigins, func(allowed string) bool { return originMatches(allowed, origin) })
}

// originMatches reports whether origin is allowed by the entry allowed of AllowedOrigins.
func originMatches(allowed, origin string) bool {
	if allowed == "*" || allowed == origin {
		return true
	}
	base, ok := strings.CutSuffix(allowed, ":*")
	if !ok {
		return false
	}
	if origin == base {
		return true
	}
	port, ok := strings.CutPrefix(origin, base+":")
	if !ok || port == "" || len(port) > 5 {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// Serve adds the CORS headers of r to w and answers a preflight request for a route served with
// methods ("POST", "GET, POST"); it reports whether the request was answered.
func (c *CORS) Serve(w http.ResponseWriter, r *http.Request, methods string) bool {
	origin := r.Header.Get("Origin")
	if c == nil || origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	allowed := c.allows(origin)
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
		if c.AllowCredentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	if !allowed {
		WriteError(w, r, nil, 0, &contracts.Error{Code: contracts.CodeForbidden,
			Message: "Origin " + strconv.Quote(origin) + " is not allowed: add it to the CORS allowed origins of the server."})
		return true
	}
	headers := c.AllowedHeaders
	if len(headers) == 0 {
		headers = defaultCORSHeaders()
	}
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = 10 * time.Minute
	}
	h.Set("Access-Control-Allow-Methods", methods+", OPTIONS")
	h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	h.Set("Access-Control-Max-Age", strconv.Itoa(int(maxAge/time.Second)))
	w.WriteHeader(http.StatusNoContent)
	return true
}
