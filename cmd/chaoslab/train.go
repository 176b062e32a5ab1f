package main

import (
	"errors"
	"fmt"
	"os"
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
time to the right diagnosis and a score.`,
		Example:           `  chaoslab train il-0206-consul-agent-oom-primary-fallback --trainee sam`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarioIDs,
		RunE:              func(cmd *cobra.Command, args []string) error { return runTrain(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.variant, "variant", "", "the variant to play (default: the scenario's first, usually vulnerable)")
	fl.Int64Var(&f.seed, "seed", 1, "random seed (recorded in the report; it also orders the candidate causes)")
	fl.StringVar(&f.out, "out", "out/runs", "parent folder of the run's report folder")
	fl.StringVar(&f.placement, "placement", "auto", "local, docker or auto")
	fl.IntVar(&f.port, "port", gameday.DefaultPort, "the dashboard's port on 127.0.0.1 (0: any free port)")
	fl.StringVar(&f.trainee, "trainee", os.Getenv("USER"), "the trainee's name (in the debrief)")
	fl.DurationVar(&f.hold, "hold", training.DefaultHold, "the longest a checkpoint holds the timeline for an answer")
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
	f.command = "chaoslab train"
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
	return err
}
