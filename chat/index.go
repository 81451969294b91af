package chat

import (
	"sync"

	"github.com/kortyx-go/kortyx/contracts"
)

// sessionIndex remembers which session each checkpoint belongs to, so that the checkpoint route
// can serve Kortyx's requests, which name only a checkpoint (get, rollback and fork without
// sessionId) when their ids do not carry their session (cp-<uuid>: made before ids were
// cp-<uuid>@<sessionId>, or of a session id over 216 characters). The index learns from the
// checkpoint chunks of the responses the chat route streams or finalizes, and from the
// checkpoint route's own answers (list, get, rollback, fork); it keeps the newest max entries.
// It lives in the memory of one process: a checkpoint learned by another process, or before a
// restart, is found with CheckpointOptions.ResolveSession, or by sending its sessionId. Safe for
// concurrent use.
type sessionIndex struct {
	mu    sync.Mutex
	max   int
	m     map[string]string
	order []string
}

// defaultSessionIndexSize is the number of checkpoints the process-wide index keeps: about
// 320 bytes each (a cp-<uuid> id and a uuid session id), so at most about 3.2 MB.
const defaultSessionIndexSize = 10_000

// processIndex is the index of the handlers whose options name none, shared by the chat and
// checkpoint handlers of the process (only checkpoint ids that do not carry their session need
// it).
var processIndex = newSessionIndex(defaultSessionIndexSize)

// newSessionIndex returns an index of at most max checkpoints (at least 1).
func newSessionIndex(max int) *sessionIndex {
	if max < 1 {
		max = 1
	}
	return &sessionIndex{max: max, m: map[string]string{}}
}

func (x *sessionIndex) orDefault() *sessionIndex {
	if x == nil {
		return processIndex
	}
	return x
}

// Put records that checkpoint checkpointID belongs to session sessionID (empty ids are ignored).
func (x *sessionIndex) put(checkpointID, sessionID string) {
	if checkpointID == "" || sessionID == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.m[checkpointID]; !ok {
		x.order = append(x.order, checkpointID)
		for len(x.order) > x.max {
			delete(x.m, x.order[0])
			x.order = x.order[1:]
		}
	}
	x.m[checkpointID] = sessionID
}

// Session returns the session of a checkpoint, if the index knows it.
func (x *sessionIndex) session(checkpointID string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.m[checkpointID]
	return s, ok
}

// learn records the checkpoint of a checkpoint chunk.
func (x *sessionIndex) learn(c contracts.Chunk) {
	if c.Type == contracts.ChunkCheckpoint {
		x.put(c.ID, c.SessionID)
	}
}
