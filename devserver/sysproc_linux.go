package devserver

import "syscall"

// sysProcAttr puts the server in its own process group (so signals reach
// everything it spawns and a terminal's Ctrl-C is left to the parent) and
// has the kernel SIGKILL it when the parent dies. Pdeathsig fires when the
// OS thread that started the child exits; the Go runtime only retires
// threads of goroutines that exit while locked with runtime.LockOSThread,
// so do not call Start from such a goroutine.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
