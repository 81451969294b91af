package web

import "context"

// SessionItem is one session of GET /api/sessions.
type SessionItem = sessionItem

// Timeline reads runID's timeline as GET /api/runs/{id}/timeline does.
func Timeline(ctx context.Context, o Options, runID string) (*timeline, error) {
	return o.timeline(ctx, runID)
}
