package ringwal_test

// Checks that keep README.md, ARCHITECTURE.md and bench/README.md true to
// the code they describe: the metrics table, the Go version, the install
// lines, the files they name, the restart figures the benchmark findings
// quote. (The commands in README code blocks are checked by cmd/ringwal's
// TestDocsReadmeCommandsExist, which can run the CLI in-process.)

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// readDoc returns a repository file's text.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// section returns the text of the markdown section whose heading line is
// heading, up to the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no section %q", heading)
	rest := doc[i+len(heading)+2:]
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	for _, l := range []string{"\n" + level + " ", "\n" + level[:max(1, len(level)-1)] + " "} {
		if j := strings.Index(rest, l); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}

// goModLine returns the value of the go.mod directive named directive
// ("module", "go").
func goModLine(t *testing.T, directive string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(readDoc(t, "go.mod")))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == directive {
			return f[1]
		}
	}
	t.Fatalf("go.mod has no %s line", directive)
	return ""
}

// README: "It needs Go X or newer (the go line of go.mod)", and its install
// lines name the module go.mod declares.
func TestDocsReadmeGoVersionAndInstall(t *testing.T) {
	readme := readDoc(t, "README.md")
	goLine := goModLine(t, "go") // 1.26.0
	parts := strings.SplitN(goLine, ".", 3)
	require.GreaterOrEqual(t, len(parts), 2, "go line %q", goLine)
	want := parts[0] + "." + parts[1]
	m := regexp.MustCompile(`needs Go (\d+\.\d+(?:\.\d+)?) or newer`).FindAllStringSubmatch(readme, -1)
	require.Len(t, m, 1, "the README states the Go version it needs once")
	assert.Equal(t, want, m[0][1], "the README's Go version is go.mod's go line (%s)", goLine)

	// The first two commands stay the front door; then the install lines,
	// before the first section.
	first := regexp.MustCompile("(?s)^# ringwal\n\n```sh\n(.*?)```").FindStringSubmatch(readme)
	require.NotNil(t, first, "the README opens with a sh code block")
	assert.Equal(t, "go run ./cmd/ringwal demo\ngo test -race work\n", first[1])
	top := readme[:strings.Index(readme, "\n## ")]
	module := goModLine(t, "module")
	assert.Contains(t, top, "go get "+module+"\n", "a go get line near the top")
	assert.Contains(t, top, `import "`+module+`"`, "the import path near the top")
}

// fileRefRE matches what reads as a repository path in prose or code: a
// name with an extension the repository's files have, optionally with
// directories. URLs are removed before it is applied.
var fileRefRE = regexp.MustCompile(`(?:\.{0,2}/)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\.(?:go|md|png|svg|sh|mod|txt|json)\b`)

// README.md and ARCHITECTURE.md name no file the repository does not
// have: a path is looked up from the repository root (one leading out of
// it, ../, is missing from every clone), and a bare file name
// (ARCHITECTURE.md names each package's files without their directory) is
// found anywhere in the repository.
func TestDocsNameOnlyFilesThatExist(t *testing.T) {
	names := map[string]bool{}
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	}))
	urlRE := regexp.MustCompile(`https?://\S+`)
	for _, doc := range []string{"README.md", "ARCHITECTURE.md"} {
		text := urlRE.ReplaceAllString(readDoc(t, doc), "")
		var missing []string
		for _, ref := range fileRefRE.FindAllString(text, -1) {
			if strings.HasPrefix(ref, "../") { // outside the repository: a clone does not have it
				missing = append(missing, ref)
				continue
			}
			if strings.Contains(ref, "/") || strings.HasPrefix(ref, ".") {
				if _, err := os.Stat(filepath.Join(filepath.Dir(doc), ref)); err != nil {
					missing = append(missing, ref)
				}
				continue
			}
			if !names[ref] {
				missing = append(missing, ref)
			}
		}
		slices.Sort(missing)
		assert.Empty(t, slices.Compact(missing), "%s names files the repository does not have", doc)
	}
}

// bench/README.md's findings quote the restart figures of the table they
// stand beside (bench/results/results.md, W4), not older ones.
func TestDocsBenchFindingsQuoteTheRestartTable(t *testing.T) {
	results := readDoc(t, filepath.Join("bench", "results", "results.md"))
	w4 := section(t, results, "## W4 — restart: open → first delivery with a backlog")
	row := regexp.MustCompile(`(?m)^\| pending 1000000 \|(.*)\|$`).FindStringSubmatch(w4)
	require.NotNil(t, row, "results.md's W4 row for 10^6 pending")
	cellRE := regexp.MustCompile(`[0-9.]+ ms`)
	var cells []string
	for _, c := range strings.Split(row[1], "|") {
		cells = append(cells, cellRE.FindString(c))
	}
	require.NotEmpty(t, cells[0], "ringwal's own W4 figure")

	readme := readDoc(t, filepath.Join("bench", "README.md"))
	findings := readme[strings.Index(readme, "\n## Findings"):]
	i := strings.Index(findings, "**W4")
	require.GreaterOrEqual(t, i, 0, "the findings have a W4 paragraph")
	w4Finding := findings[i:]
	if j := strings.Index(w4Finding, "\n\n"); j >= 0 {
		w4Finding = w4Finding[:j]
	}
	w4Finding = strings.Join(strings.Fields(w4Finding), " ")
	assert.Contains(t, w4Finding, cells[0], "the W4 finding quotes ringwal's figure, %s", cells[0])
	for _, f := range cellRE.FindAllString(w4Finding, -1) {
		assert.Contains(t, cells, f, "the W4 finding quotes %s, which the table does not have", f)
	}
}

// README's first example and Options.Strict: the default order is
// weighted, so a low tier still moves while a higher one has a backlog;
// Strict: true is the one switch to strict priority order.
func TestDocsDefaultOrderIsWeightedStrictIsOneSwitch(t *testing.T) {
	order := func(o ringwal.Options) int {
		e, _ := memEngine(t, o)
		for i := 0; i < 30; i++ {
			enqueueP(t, e, ringwal.Critical, "c")
		}
		enqueueP(t, e, ringwal.Background, "b")
		for i := 0; i < 31; i++ {
			d := dequeue(t, e)
			require.NoError(t, e.Ack(d.Lease))
			if string(d.Message.Payload) == "b" {
				return i
			}
		}
		t.Fatal("the background message was not delivered")
		return -1
	}
	assert.Less(t, order(ringwal.Options{}), 30, "by default the background message goes out before the critical backlog is drained")
	assert.Equal(t, 30, order(ringwal.Options{Strict: true}), "Strict: true drains the critical tier first")
}
