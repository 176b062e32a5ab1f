package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/seeds"
)

// newCaseCmd writes a commented case record to fill in.
func newCaseCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "case ID [-o FILE]",
		Short: "Write a commented case record to fill in",
		Long: `Write a case record for the incident ID: every key with a comment saying
what it holds, the required ones left empty (""). It parses as written;
fill in its "" and chaoslab validate FILE names whatever is left. Use it
with chaoslab --cases DIR, or name its file in a scenario (case:
path.yaml); chaoslab new scenario --case FILE writes a scenario for it.
seeds/reference.md lists every key; docs/writing-a-case-record.md tells
how to write one.

ID is letters, digits, '-', '.' or '_' (ACME-2024-03), and not the id
of a case record chaoslab knows (a built-in one, or one of --cases).

Exit status: 0; 2 for bad input (an id taken or malformed, a file that
exists).`,
		Example: `  chaoslab new case ACME-2024-03 -o cases/acme-2024-03.yaml
  chaoslab validate cases/acme-2024-03.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			text, err := seeds.Template(id)
			if err != nil {
				return errInput(fmt.Errorf("new case: %w", err))
			}
			if rec, err := caseRecord(id); err == nil {
				where := "a built-in case record's"
				if !rec.Builtin() {
					where = "that of " + rec.File()
				}
				return errInput(fmt.Errorf("new case: id %s is %s: give yours an id of its own", id, where))
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(text)
				return err
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return errInput(fmt.Errorf("write case record: %w", err))
			}
			_, werr := f.Write(text)
			if err := errors.Join(werr, f.Close()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: fill in its \"\", then chaoslab validate %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file (refused if it exists; default: standard output)")
	return cmd
}
