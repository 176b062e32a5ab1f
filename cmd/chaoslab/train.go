package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/training"
)

type trainFlags struct {
	gamedayFlags
	trainee string
	hold    time.Duration
	history bool
}

func trainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train ID|FILE",
		Short: "Meet an incident as its responders did, on real servers, then read a debrief",
		Long: `Run one variant of a scenario (default: the vulnerable one) on real servers
as a training session, with the game day's dashboard on 127.0.0.1: the
trainee sees the symptoms (charts, client exits, OOM kills) but not the
fault, and the case record's timeline as the run reaches it. At each
checkpoint (10 s into the incident, before each later step, before the end)
the trainee predicts how a series will move and names the cause among
candidates: the real one, the explanations the responders followed first,
other incidents' causes. The timeline waits for an answer (--hold at most).
The trainee may act on the stack at any time. When the run ends its report
opens with a debrief: the predictions against what was measured, the
diagnosis against the write-up, the actions against the responders', the
time to the right diagnosis and a score. Each session is kept in the
trainee's history ($CHAOSLAB_TRAINEES, else ~/.local/share/chaoslab/trainees,
a file per trainee): --history prints it.`,
		Example: `  chaoslab train il-0206-consul-agent-oom-primary-fallback --trainee sam
  chaoslab train --history --trainee sam`,
		Args:              cobra.RangeArgs(0, 1),
		ValidArgsFunction: completeScenarioIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.history {
				return printHistory(cmd, f.trainee)
			}
			if len(args) != 1 {
				return errInput(errors.New("train: give a scenario (or --history)"))
			}
			return runTrain(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.variant, "variant", "", "the variant to play (default: the scenario's first, usually vulnerable)")
	fl.Int64Var(&f.seed, "seed", 1, "random seed (recorded in the report; it also orders the candidate causes)")
	fl.StringVar(&f.out, "out", "out/runs", "parent folder of the run's report folder")
	fl.StringVar(&f.placement, "placement", "auto", "local, docker or auto")
	fl.IntVar(&f.port, "port", gameday.DefaultPort, "the dashboard's port on 127.0.0.1 (0: any free port)")
	fl.StringVar(&f.trainee, "trainee", os.Getenv("USER"), "the trainee's name (in the debrief)")
	fl.DurationVar(&f.hold, "hold", training.DefaultHold, "the longest a checkpoint holds the timeline for an answer")
	fl.BoolVar(&f.history, "history", false, "print the trainee's kept sessions instead of training")
	return cmd
}

func runTrain(cmd *cobra.Command, ref string, f trainFlags) error {
	s, v, err := gamedayVariant(ref, f.variant)
	if err != nil {
		return err
	}
	plan, err := training.PlanFor(s, f.seed)
	if err != nil {
		return errInput(err)
	}
	var sess *training.Session
	f.command, f.ref = "chaoslab train", ref
	r, err := playLive(cmd, s, v, f.gamedayFlags, "training", func(srv *gameday.Server) runner.Steer {
		sess = training.NewSession(plan, f.trainee, srv.Controls)
		sess.Hold = f.hold
		sess.Routes(srv.Mount)
		return sess
	})
	if r == nil || r.Dir == "" || sess == nil {
		return err
	}
	if werr := sess.Finish(r); werr != nil {
		return errors.Join(err, werr)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "debrief: score %d of %d, in %s/index.html\n", r.Debrief.Score, r.Debrief.Max, r.Dir)
	dir, herr := training.HistoryDir()
	if herr == nil {
		var path string
		if path, herr = training.Keep(dir, r); herr == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "kept in %s (chaoslab train --history --trainee %s)\n", path, f.trainee)
		}
	}
	return errors.Join(err, herr)
}

// printHistory prints a trainee's kept sessions, oldest first.
func printHistory(cmd *cobra.Command, trainee string) error {
	dir, err := training.HistoryDir()
	if err != nil {
		return err
	}
	hs, err := training.History(dir, trainee)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(hs) == 0 {
		fmt.Fprintf(out, "no training session kept for %s yet (in %s)\n", trainee, dir)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "when\tcase\tvariant\tscore\tdiagnosis\toutcome\treport")
	for _, h := range hs {
		diag := "not found"
		if h.Diagnosed {
			diag = fmt.Sprintf("right after %.0f s", h.DiagnosedAfter)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d of %d\t%s\t%s\t%s\n", h.At.Local().Format("2006-01-02 15:04"), h.Case, h.Variant, h.Score, h.Max, diag, h.Outcome, h.Report)
	}
	return tw.Flush()
}
