package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeCommands returns the command lines of the repository README's
// code blocks that run this tool ("ringwal ...", "go run ./cmd/ringwal
// ..."), each as the words after the tool's name.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var cmds [][]string
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		for _, prefix := range []string{"ringwal ", "go run ./cmd/ringwal "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				if i := strings.Index(rest, " #"); i >= 0 {
					rest = rest[:i]
				}
				cmds = append(cmds, strings.Fields(rest))
			}
		}
	}
	return cmds
}

// Every command the README's code blocks run names a subcommand that
// exists: it resolves in the command tree, and its --help succeeds.
func TestDocsReadmeCommandsExist(t *testing.T) {
	cmds := readmeCommands(t)
	require.Greater(t, len(cmds), 20, "the README's command lines were not found")
	helped := map[string]bool{}
	for _, words := range cmds {
		root := newRootCmd(io.Discard, io.Discard)
		cmd, rest, err := root.Find(words)
		line := "ringwal " + strings.Join(words, " ")
		if !assert.NoError(t, err, "README: %s", line) || !assert.True(t, cmd != root, "README: %s names no subcommand", line) {
			continue
		}
		// A group (dlq, keys, wal, ...) runs nothing itself: a word after
		// it is a subcommand it lacks.
		if !assert.False(t, cmd.HasSubCommands() && !cmd.Runnable() && len(rest) > 0,
			"README: %s: %s has no subcommand %q", line, cmd.CommandPath(), strings.Join(rest, " ")) {
			continue
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		if helped[strings.Join(path, " ")] {
			continue
		}
		helped[strings.Join(path, " ")] = true
		var out, errb bytes.Buffer
		code := run(append(path, "--help"), &out, &errb)
		assert.Equal(t, exitOK, code, "ringwal %s --help (README: %s): %s", strings.Join(path, " "), line, errb.String())
		assert.Contains(t, out.String(), "Usage:", "ringwal %s --help", strings.Join(path, " "))
	}
	t.Logf("%d README command lines, %d subcommands", len(cmds), len(helped))
}
