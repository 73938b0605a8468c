package wal

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder collects the ioTrace events under one directory tree.
type recorder struct {
	root string
	mu   sync.Mutex
	evs  []ioEvent
	on   func(ev ioEvent) // optional, called under mu after recording
}

// record installs a trace hook for events under root until the test ends.
func record(t testing.TB, root string) *recorder {
	t.Helper()
	rc := &recorder{root: root}
	h := func(ev ioEvent) {
		if !strings.HasPrefix(ev.path, rc.root) {
			return
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.evs = append(rc.evs, ev)
		if rc.on != nil {
			rc.on(ev)
		}
	}
	if !ioTrace.CompareAndSwap(nil, &h) {
		t.Fatal("another trace hook is installed")
	}
	t.Cleanup(func() { ioTrace.Store(nil) })
	return rc
}

func (rc *recorder) events() []ioEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]ioEvent(nil), rc.evs...)
}

// unsyncedDirChanges lists the directory changes (create, mkdir, rename,
// remove) among evs that no later fsync of their parent directory follows.
func unsyncedDirChanges(evs []ioEvent) []string {
	var out []string
	for i, ev := range evs {
		var parents []string
		switch ev.op {
		case opCreate, opMkdir, opRemove:
			parents = []string{filepath.Dir(ev.path)}
		case opRename:
			parents = []string{filepath.Dir(ev.path), filepath.Dir(ev.to)}
		default:
			continue
		}
		for _, p := range parents {
			synced := false
			for _, later := range evs[i+1:] {
				if later.op == opSyncDir && later.path == p {
					synced = true
					break
				}
			}
			if !synced {
				out = append(out, ev.op.String()+" "+ev.path+" "+ev.to)
			}
		}
	}
	return out
}
