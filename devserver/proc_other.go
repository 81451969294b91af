//go:build !unix

package devserver

import (
	"errors"
	"os"
	"syscall"
)

// Without Unix process groups and signals, the server is a plain child
// process and both a graceful and a forced stop kill it.

func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return kill(p) }

func kill(p *os.Process) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// lockDB does not lock without flock: two servers on one database fail as SQLite makes them.
func lockDB(string) (func(), error) { return func() {}, nil }
