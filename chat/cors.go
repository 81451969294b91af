package chat

import "github.com/kortyx-go/kortyx/httpwire"

// CORS lets browser apps on other origins call the chat, stop and checkpoint routes
// (Options.CORS, CheckpointOptions.CORS). It is off when nil.
//
// A preflight request (OPTIONS with Origin and Access-Control-Request-Method) from an allowed
// origin is answered 204 with Access-Control-Allow-Origin (the origin), -Allow-Methods
// ("POST, OPTIONS"), -Allow-Headers, -Max-Age and, with AllowCredentials,
// -Allow-Credentials: true; from another origin it is refused 403 FORBIDDEN. An actual request
// from an allowed origin gets Access-Control-Allow-Origin (and -Allow-Credentials); one from
// another origin is served without them, so the browser does not let the page read it. Every
// answer to a request with an Origin header carries Vary: Origin. The fields:
//
//   - AllowedOrigins are the origins allowed, exactly as browsers send them
//     ("https://app.example.com"); "*" allows any origin, and an origin whose port is "*"
//     ("http://localhost:*") allows that scheme and host on any port (and on none).
//   - AllowCredentials lets the page send cookies and HTTP authentication.
//   - AllowedHeaders are the request headers a page may send (default: Content-Type,
//     Authorization, Last-Event-ID and X-Kortyx-Resumable).
//   - MaxAge is how long a browser may cache a preflight answer (default 10 minutes).
//
// The protocol wires (packages aisdk, mcpserver, a2aserver) take the same type.
type CORS = httpwire.CORS
