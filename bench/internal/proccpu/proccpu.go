// Package proccpu reads how much CPU a process has used, from /proc (Linux), for the
// benchmarks that weigh the dev server's and the workers' CPU per turn.
package proccpu

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Ticks is the user and system CPU time of process pid in clock ticks (utime + stime of
// /proc/<pid>/stat); 0 when it cannot be read.
func Ticks(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime: field 14 of stat
	s, _ := strconv.ParseInt(f[12], 10, 64) // stime: field 15
	return u + s
}

// Tick is the length of a clock tick of Ticks (USER_HZ, 100 on Linux).
const Tick = 10 * time.Millisecond

// Time is Ticks as a duration.
func Time(pid int) time.Duration { return time.Duration(Ticks(pid)) * Tick }
