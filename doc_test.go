package ringwal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackageDocOpensWithUsage protects what `go doc .` shows first: a
// short usage example (Open, Enqueue, Run, Dequeue and Ack, Close) ahead
// of the prose, then where to go next, naming only runnable examples that
// exist.
func TestPackageDocOpensWithUsage(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	doc := f.Doc.Text()
	next := strings.Index(doc, "# Where to go next")
	require.Positive(t, next, "the package doc ends with where to go next")
	first := strings.Index(doc, "\n\t") // the first code block
	require.Positive(t, first)
	require.Less(t, first, strings.Index(doc, "# What it does"), "the usage example comes before the prose")
	block := doc[first : strings.Index(doc[first:], "\n\n")+first]
	assert.LessOrEqual(t, strings.Count(block, "\n"), 12, "about ten lines")
	for _, call := range []string{"ringwal.Open(", "e.Close()", "e.Enqueue(", "e.Run(", "e.Dequeue(", "e.Ack("} {
		assert.Contains(t, block, call)
	}
	// The package doc is a user's page: the goroutine inventory and the
	// ownership of mechanisms are ARCHITECTURE.md's.
	assert.NotContains(t, doc, "# Goroutines")
	arch, err := os.ReadFile("ARCHITECTURE.md")
	require.NoError(t, err)
	assert.Contains(t, string(arch), "\n## Goroutines\n")

	declared := map[string]bool{}
	files, err := filepath.Glob("example*_test.go")
	require.NoError(t, err)
	for _, name := range files {
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		ef, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		require.NoError(t, err)
		for _, d := range ef.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				declared[fn.Name.Name] = true
			}
		}
	}
	named := regexp.MustCompile(`\bExample\w*`).FindAllString(doc, -1)
	require.NotEmpty(t, named)
	for _, n := range named {
		assert.True(t, declared[n], "doc.go names %s, which no example file declares", n)
	}
}
