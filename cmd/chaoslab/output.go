package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// outputFlag adds -o/--output text|json to cmd.
func outputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

// asJSON says whether --output asks for JSON; an unknown format is an
// input error.
func asJSON(format string) (bool, error) {
	switch format {
	case "", "text":
		return false, nil
	case "json":
		return true, nil
	}
	return false, errInput(fmt.Errorf("read --output: %q: want text or json", format))
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
