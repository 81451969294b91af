//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ownLockWait is how long lockDB waits for a lock held by this process (see lockDB).
const ownLockWait = 2 * time.Second

// terminate asks the process group led by p to shut down.
func terminate(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }

// kill kills the process group led by p.
func kill(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }

func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) { // already gone
		return nil
	}
	return err
}

// lockDB takes the lock of a dev server database: an exclusive flock on DBFile+".lock", which
// holds the process id of its holder. The lock ends with the process (or release).
func lockDB(db string) (release func(), err error) {
	path := db + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kortyx: locking the dev server database: %w", err)
	}
	// A lock this process released a moment ago can still be held by a child forked by a
	// concurrent exec in this process until that child execs (its copy of the descriptor is
	// closed only then): when the holder is this process, ask again for a little while.
	deadline := time.Now().Add(ownLockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		if holder, _ := os.ReadFile(path); strings.TrimSpace(string(holder)) != strconv.Itoa(os.Getpid()) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, dbInUse(db, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("kortyx: locking the dev server database %s: %w", db, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // who holds it, for the message
	}
	return func() { _ = f.Close() }, nil
}
