package wal

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// A model of what a file system holds after a power loss, fed by the
// ioTrace events of a run. Each file (inode) has what the page cache holds
// (cache) and what its last fsync made durable (durable); each directory
// has the entries its last fsync made durable and the changes made since,
// in order. A power-loss image keeps every durable thing, a prefix of each
// directory's later changes (journalling file systems commit directory
// changes in order), and for each file its durable bytes plus some of the
// bytes written since: none, all, a prefix torn at any byte, or 4 KiB
// pages kept or lost independently (a lost page before a kept one reads
// as zeros: a hole before later, complete batches).

const pageSize = 4096

type inode struct {
	cache, durable []byte
}

type nsChange struct {
	op       ioOp // opCreate, opRename, opRemove
	name, to string
	ino      *inode
}

type model struct {
	root    string
	names   map[string]*inode            // current namespace: path -> inode
	dnames  map[string]map[string]*inode // dir -> durable entries
	pending map[string][]nsChange        // dir -> changes since its last fsync
}

// newModel starts from root as it is on disk, all of it durable (the run
// starts after an Open that fsynced everything it made).
func newModel(t testing.TB, root string) *model {
	m := &model{root: root, names: map[string]*inode{}, dnames: map[string]map[string]*inode{}, pending: map[string][]nsChange{}}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			m.dnames[p] = map[string]*inode{}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ino := &inode{cache: data, durable: bytes.Clone(data)}
		m.names[p] = ino
		m.dnames[filepath.Dir(p)][filepath.Base(p)] = ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *model) apply(t testing.TB, ev ioEvent) {
	dir := filepath.Dir(ev.path)
	switch ev.op {
	case opCreate:
		ino := &inode{}
		m.names[ev.path] = ino
		m.pending[dir] = append(m.pending[dir], nsChange{op: opCreate, name: filepath.Base(ev.path), ino: ino})
	case opWrite:
		ino := m.names[ev.path]
		if ino == nil {
			t.Fatalf("write to unknown file %s", ev.path)
		}
		end := int(ev.off) + len(ev.data)
		if len(ino.cache) < end {
			ino.cache = append(ino.cache, make([]byte, end-len(ino.cache))...)
		}
		copy(ino.cache[ev.off:], ev.data)
	case opTruncate:
		if ino := m.names[ev.path]; ino != nil && int(ev.off) < len(ino.cache) {
			ino.cache = ino.cache[:ev.off]
		}
	case opSync:
		if ino := m.names[ev.path]; ino != nil {
			n := len(ino.cache)
			if ev.prefix {
				// An fsync beside later writes: durable up to where the
				// file was when it began (never less than before).
				n = min(n, max(int(ev.off), len(ino.durable)))
			}
			ino.durable = bytes.Clone(ino.cache[:n])
		}
	case opRename:
		ino := m.names[ev.path]
		delete(m.names, ev.path)
		m.names[ev.to] = ino
		m.pending[dir] = append(m.pending[dir], nsChange{op: opRename, name: filepath.Base(ev.path), to: filepath.Base(ev.to), ino: ino})
	case opRemove:
		delete(m.names, ev.path)
		m.pending[dir] = append(m.pending[dir], nsChange{op: opRemove, name: filepath.Base(ev.path)})
	case opSyncDir:
		d := map[string]*inode{}
		for p, ino := range m.names {
			if filepath.Dir(p) == ev.path {
				d[filepath.Base(p)] = ino
			}
		}
		m.dnames[ev.path] = d
		m.pending[ev.path] = nil
	}
}

// How an image treats what was not fsynced.
type lossKind int

const (
	lossDropAll lossKind = iota // nothing unsynced survives
	lossKeepAll                 // everything written survives (a killed process)
	lossTorn                    // a prefix of each file's unsynced bytes, torn at any byte
	lossPages                   // unsynced pages kept or lost independently
	lossKinds
)

func (k lossKind) String() string {
	return [...]string{"drop-all", "keep-all", "torn", "pages"}[k]
}

// content is what a file holds in an image.
func content(ino *inode, kind lossKind, rng *rand.Rand) []byte {
	d, c := ino.durable, ino.cache
	if len(c) < len(d) || !bytes.Equal(c[:len(d)], d) {
		// Rewritten in place since the fsync: old or new, whole.
		if kind == lossKeepAll || (kind != lossDropAll && rng.IntN(2) == 0) {
			return bytes.Clone(c)
		}
		return bytes.Clone(d)
	}
	switch kind {
	case lossDropAll:
		return bytes.Clone(d)
	case lossKeepAll:
		return bytes.Clone(c)
	case lossTorn:
		return bytes.Clone(c[:len(d)+rng.IntN(len(c)-len(d)+1)])
	}
	out := bytes.Clone(c)
	end := len(d)
	for p := len(d) / pageSize * pageSize; p < len(c); p += pageSize {
		lo, hi := max(p, len(d)), min(p+pageSize, len(c))
		if rng.IntN(2) == 0 {
			clear(out[lo:hi])
			continue
		}
		end = hi
		if rng.IntN(4) == 0 { // this page only partly written back
			end = lo + rng.IntN(hi-lo+1)
			clear(out[end:hi])
		}
	}
	return out[:end]
}

// image writes one power-loss image of the model into dst (emptied first).
func (m *model) image(t testing.TB, dst string, kind lossKind, rng *rand.Rand) {
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(m.dnames))
	for d := range m.dnames {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		entries := map[string]*inode{}
		for n, ino := range m.dnames[d] {
			entries[n] = ino
		}
		ch := m.pending[d]
		keep := 0
		switch kind {
		case lossKeepAll:
			keep = len(ch)
		case lossTorn, lossPages:
			keep = rng.IntN(len(ch) + 1)
		}
		for _, c := range ch[:keep] {
			switch c.op {
			case opCreate:
				entries[c.name] = c.ino
			case opRename:
				delete(entries, c.name)
				entries[c.to] = c.ino
			case opRemove:
				delete(entries, c.name)
			}
		}
		rel, _ := filepath.Rel(m.root, d)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, ino := range entries {
			if err := os.WriteFile(filepath.Join(out, n), content(ino, kind, rng), 0o640); err != nil {
				t.Fatal(err)
			}
		}
	}
}
