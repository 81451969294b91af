//go:build unix

package devserver

import (
	"errors"
	"os"
	"syscall"
)

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
