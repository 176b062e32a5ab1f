package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// newCmd writes templates of the files a user writes.
func newCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Write a template: a case record (new case), or a scenario for one (new scenario)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCaseCmd(), newScenarioCmd())
	return cmd
}

func newScenarioCmd() *cobra.Command {
	var caseRef, system, kind, id, out string
	cmd := &cobra.Command{
		Use:   "scenario --case ID_OR_FILE [--kind KIND] [--system SYSTEM] [-o FILE]",
		Short: "Write a scenario skeleton that validates as written",
		Long: `Write a scenario skeleton for a case record (a built-in id, or the path
of a record of yours): the system's topology and the kind's settings with
their defaults, commented out, each with what it means; one fault; a
vulnerable and a mitigated variant; a hypothesis every system can judge.
It validates as written: change what its comments say, then validate it.

The system defaults to the case record's lab_system; the kind to the one
kind (other than exec, which runs a program of yours) that runs on it,
or give --kind (chaoslab metrics lists the kinds).

Exit status: 0; 2 for bad input (an unknown case, kind or system, a file
that exists).`,
		Example: `  chaoslab new scenario --case IL-0587 --kind zk-tree-mirror -o my-scenario.yaml
  chaoslab new scenario --case ./cases/acme-2024.yaml --kind exec --system etcd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := skeletonOptions(caseRef, system, kind, id)
			if err != nil {
				return errInput(err)
			}
			text, err := scenarios.Skeleton(o)
			if err != nil {
				return errInput(err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(text)
				return err
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return errInput(fmt.Errorf("write scenario: %w", err))
			}
			_, err = f.Write(text)
			return errors.Join(err, f.Close())
		},
	}
	cmd.Flags().StringVar(&caseRef, "case", "", "the case record: a built-in id (IL-0587) or a path to a record of yours")
	cmd.Flags().StringVar(&system, "system", "", "the system (default: the case record's lab_system)")
	cmd.Flags().StringVar(&kind, "kind", "", "the workload kind (default: the one kind of the system, exec aside)")
	cmd.Flags().StringVar(&id, "id", "", "the scenario's id (default: the case id in lower case, then -new)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file (refused if it exists; default: standard output)")
	_ = cmd.MarkFlagRequired("case")
	return cmd
}

// skeletonOptions resolves the case record, the system and the kind.
func skeletonOptions(caseRef, system, kind, id string) (scenarios.SkeletonOptions, error) {
	var rec seeds.Record
	var err error
	if scenarios.IsCasePath(caseRef) {
		rec, err = seeds.LoadFile(caseRef)
	} else {
		rec, err = caseRecord(caseRef)
	}
	if err != nil {
		return scenarios.SkeletonOptions{}, err
	}
	if system == "" {
		system = rec.LabSystem
	}
	if kind == "" {
		var kinds []string
		for _, name := range lab.KindNames() {
			k, _ := lab.GetKind(name)
			if name != "exec" && slices.Contains(k.Systems(), system) {
				kinds = append(kinds, name)
			}
		}
		if len(kinds) != 1 {
			return scenarios.SkeletonOptions{}, fmt.Errorf("new scenario: give --kind: on %s one of %s, or exec (a program of yours)", system, strings.Join(kinds, ", "))
		}
		kind = kinds[0]
	}
	if id == "" {
		id = strings.ToLower(rec.ID) + "-new"
	}
	ref := rec.ID
	if scenarios.IsCasePath(caseRef) {
		ref = filepath.ToSlash(caseRef)
	}
	return scenarios.SkeletonOptions{Case: ref, System: system, Kind: kind, ID: id}, nil
}
