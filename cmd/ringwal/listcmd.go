package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// listCmd completes a `… list [DIR | --addr URL]` command (the keys',
// queues' and schedules'): it reads the rows with fetch from a directory
// or a live engine and prints them with print, or as a JSON array with
// --json (jsonHelp says of what). A fetch error is wrapped with doing
// ("listing queues"), unless doing is "".
func listCmd[V any](cmd *cobra.Command, doing, jsonHelp string,
	fetch func(source, context.Context) ([]V, error), print func(io.Writer, []V) error) *cobra.Command {
	var t target
	var asJSON bool
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) (err error) {
		src, err := t.openNoIDs(args)
		if err != nil {
			return err
		}
		defer closeSource(src, &err)
		vs, err := fetch(src, cmd.Context())
		if err != nil {
			if doing == "" {
				return err
			}
			return fmt.Errorf("%s: %w", doing, err)
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), vs)
		}
		return print(cmd.OutOrStdout(), vs)
	})
	t.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonHelp)
	return cmd
}
