package executor

import (
	"sync"
	"syscall"
)

// groups are the process groups of the host processes Rival started and
// has not reaped yet: a forced stop kills them before Rival exits.
var groups = struct {
	sync.Mutex
	pgids map[int]bool
}{pgids: map[int]bool{}}

// trackGroup remembers a started process group until the returned func is
// called (after the process was reaped).
func trackGroup(pgid int) func() {
	groups.Lock()
	groups.pgids[pgid] = true
	groups.Unlock()
	return func() {
		groups.Lock()
		delete(groups.pgids, pgid)
		groups.Unlock()
	}
}

// KillGroups kills every process group the host executor started and has not
// reaped yet: a forced stop leaves no trainer behind.
func KillGroups() {
	groups.Lock()
	defer groups.Unlock()
	for pgid := range groups.pgids {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
