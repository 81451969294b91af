package contracts

// Codes of the chat and checkpoint routes.
const (
	// CodeSessionBusy: a turn is already active in the session (HTTP 409).
	CodeSessionBusy Code = "SESSION_BUSY"
	// CodeUnauthorized: the request carries no valid credentials (HTTP 401).
	CodeUnauthorized Code = "UNAUTHORIZED"
	// CodeForbidden: the caller may not act on this session (HTTP 403).
	CodeForbidden Code = "FORBIDDEN"
	// CodeClientTurnConflict: a clientTurnId the session remembers came again with other
	// content (another answer, another message): it is not a retry (HTTP 409).
	CodeClientTurnConflict Code = "CLIENT_TURN_CONFLICT"
)
