// Package web serves a chat page and a run inspector for the Kortyx HTTP API: plain HTML, CSS
// and JavaScript embedded in the binary (no build step, nothing fetched from elsewhere).
//
// The page talks to the chat route (POST /api/chat, with X-Kortyx-Resumable: 1 so that its
// events carry offsets it can resume from after a reload), the Stop route, the checkpoint route
// and the JSON routes of [Handler]: the sessions list, a session's view and a run's timeline
// built from Temporal's history and the run's state query. See docs/web.md.
package web
