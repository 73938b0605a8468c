package main

// What the CLI says about many things and how it asks before it deletes
// or moves many: one plural helper, a summary of a long ID list, and the
// confirmation of a bulk verb (the count first, then "Proceed? [y/N]" on
// a terminal; --yes to skip it, --dry-run to only count; refused when no
// one is there to answer).

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// plural returns n with the noun's singular or plural form: "1 key",
// "2 keys", "0 entries": the confirmations and bulk reports count with it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// ID lists longer than maxIDsShown are summarised: their first
// idsShownHead IDs, then the last one.
const (
	maxIDsShown  = 20
	idsShownHead = 10
)

// summarizeIDs returns ids space-separated, or, when there are more than
// maxIDsShown, the first idsShownHead of them, an ellipsis, the last one
// and a note of what was left out ("--json for all"): a bulk verb over
// thousands prints one readable line, not thousands of numbers.
func summarizeIDs(ids []uint64) string {
	if len(ids) <= maxIDsShown {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.FormatUint(id, 10)
		}
		return strings.Join(parts, " ")
	}
	parts := make([]string, 0, idsShownHead+2)
	for _, id := range ids[:idsShownHead] {
		parts = append(parts, strconv.FormatUint(id, 10))
	}
	parts = append(parts, "...", strconv.FormatUint(ids[len(ids)-1], 10))
	return fmt.Sprintf("%s (the first %d and the last of %d shown; --json for all)", strings.Join(parts, " "), idsShownHead, len(ids))
}

// moreHint is the line a list prints when its page was full (limit > 0
// rows shown, and the source says more follow): how to ask for the next
// page.
func moreHint(shown, limit int, last uint64, hasMore bool) string {
	if limit <= 0 || shown < limit || !hasMore {
		return ""
	}
	return fmt.Sprintf("more: --after %d", last)
}

// confirmFlags are the flags of a verb that acts on many at once.
type confirmFlags struct {
	yes, dryRun bool
}

// add registers --yes and --dry-run on cmd.
func (c *confirmFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&c.yes, "yes", "y", false, "do not ask for confirmation (needed when standard input is not a terminal)")
	cmd.Flags().BoolVar(&c.dryRun, "dry-run", false, "only count what would be acted on; change nothing")
}

// errDeclined says the operator answered no: nothing was done.
var errDeclined = fmt.Errorf("declined")

// confirm asks before a verb acts on what it counted, unless --yes was
// given. what is the noun phrase with its count ("739 dead letters") and
// scope says which ("category=poison"). On a terminal it asks on stderr
// and reads the answer from stdin: y or yes proceeds, anything else
// (or end of input) is errDeclined. When stdin is not a terminal it
// refuses with a usage error that says how to proceed: no script deletes
// thousands because it forgot a flag.
func (c confirmFlags) confirm(cmd *cobra.Command, verb, what, scope string) error {
	if c.yes {
		return nil
	}
	in := cmd.InOrStdin()
	if !isTerminal(in) {
		return usagef("refusing to %s %s (%s) without confirmation: standard input is not a terminal; pass --yes to proceed, or --dry-run to only count", verb, what, scope)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "About to %s %s (%s). Proceed? [y/N] ", verb, what, scope)
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(cmd.ErrOrStderr())
		return errDeclined
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}
