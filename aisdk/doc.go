// Package aisdk is the wire of the Vercel AI SDK's chat UI (`ai` 7: useChat, AbstractChat,
// DefaultChatTransport): a chat request (POST) starts a turn of the session named by the
// chat's id, or answers its open question, and the response is the turn's chunks as a UI message
// stream (server-sent events "data: <chunk>", the header x-vercel-ai-ui-message-stream: v1, and
// "data: [DONE]" at the end). GET <route>/{id}/stream, the transport's resumeStream, reattaches
// to the chat's running turn from any API process (204 when no turn runs).
//
// The session keeps the history: the client's message list is read only for its last message
// (the user's new text, or the answer in the assistant's last step) and is never replayed. A
// tool approval of Kortyx's (a tool listed under approval:) becomes the AI SDK's
// tool-approval-request, answered by addToolApprovalResponse; any other question becomes a call
// of the tool "kortyx_ask" whose input carries the question and the JSON schema of its answer,
// answered by addToolOutput (an output-error cancels the run). docs/aisdk.md has the mapping
// tables and what is not mapped.
//
// Like every wire, it only translates: it calls [sessions.Service] and holds no state a second
// API process would need.
//
//	h, err := aisdk.New(svc, aisdk.Options{DefaultAgent: "support",
//		Authorize: func(r *http.Request, a sessions.Access) error { return nil }})
//	if err != nil {
//		return err
//	}
//	mux.Handle("POST /api/ui/chat", h)
//	mux.Handle("GET /api/ui/chat/{id}/stream", h)
package aisdk
