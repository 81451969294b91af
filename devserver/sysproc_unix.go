//go:build unix && !linux

package devserver

import "syscall"

// sysProcAttr puts the server in its own process group. Only Linux can also
// tie the child's life to the parent's (see sysproc_linux.go).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
