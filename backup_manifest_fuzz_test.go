package ringwal

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The manifest decoder takes any bytes: it returns a manifest that passes
// its checks or an error wrapping ErrDamagedBackup or ErrVersion, never
// panics, and what it accepts encodes back to a manifest it accepts again.
func FuzzDecodeManifest(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	seed := manifest{Kind: manifestKind, Version: 1, Index: 7, Snapshot: 5, Messages: 3, Files: []manifestFile{
		{Name: "FORMAT", Size: 13, SHA256: sum},
		{Name: "snap-00000000000000000005.zst", Size: 100, SHA256: sum},
		{Name: "log/00000000000000000006", Size: 40, SHA256: sum},
	}}
	b, _ := json.Marshal(&seed)
	f.Add(b)
	f.Add([]byte(`{"kind":"ringwal-backup","version":2}`))
	f.Add([]byte(`{"kind":"ringwal-backup","version":1,"files":[{"name":"../x","size":1,"sha256":""}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			if !errors.Is(err, ErrDamagedBackup) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps neither ErrDamagedBackup nor ErrVersion", err)
			}
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeManifest(again); err != nil {
			t.Fatalf("re-encoded manifest refused: %v", err)
		}
	})
}

// The decoder refuses each way a manifest can be wrong.
func TestDecodeManifestRefuses(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	file := func(name string) string { return `{"name":"` + name + `","size":1,"sha256":"` + sum + `"}` }
	head := `{"kind":"ringwal-backup","version":1,"files":[`
	cases := map[string]string{
		"not JSON":        `{`,
		"another kind":    `{"kind":"tar","version":1}`,
		"version 0":       `{"kind":"ringwal-backup","version":0}`,
		"no files":        head + `]}`,
		"no FORMAT":       head + file("log/00000000000000000001") + `]}`,
		"no segment":      head + file("FORMAT") + `]}`,
		"a foreign name":  head + file("FORMAT") + "," + file("log/00000000000000000001") + "," + file("/etc/passwd") + `]}`,
		"a name twice":    head + file("FORMAT") + "," + file("log/00000000000000000001") + "," + file("log/00000000000000000001") + `]}`,
		"a bad hash":      head + `{"name":"FORMAT","size":1,"sha256":"zz"},` + file("log/00000000000000000001") + `]}`,
		"a negative size": head + `{"name":"FORMAT","size":-1,"sha256":"` + sum + `"},` + file("log/00000000000000000001") + `]}`,
		"another snapshot": `{"kind":"ringwal-backup","version":1,"snapshot":4,"files":[` + file("FORMAT") + "," +
			file("snap-00000000000000000005.zst") + "," + file("log/00000000000000000006") + `]}`,
	}
	for name, in := range cases {
		_, err := decodeManifest([]byte(in))
		if !errors.Is(err, ErrDamagedBackup) {
			t.Errorf("%s: got %v, want ErrDamagedBackup", name, err)
		}
	}
	if _, err := decodeManifest([]byte(`{"kind":"ringwal-backup","version":2}`)); !errors.Is(err, ErrVersion) {
		t.Errorf("a newer version: got %v, want ErrVersion", err)
	}
	if _, err := decodeManifest([]byte(head + file("FORMAT") + "," + file("log/00000000000000000001") + `]}`)); err != nil {
		t.Errorf("a good manifest: %v", err)
	}
}
