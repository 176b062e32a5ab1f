package reports

import (
	"regexp"
	"sort"
	"strings"
)

// placementFlag is --placement (or the older --backend) and its value.
var placementFlag = regexp.MustCompile(`--(placement|backend)[ =](\S+)`)

// rerunCommand completes a run's rerun command with what the run used
// and the command does not say: the placement, and on a container
// placement every image resolved for it (--image NAME=REF), so that the
// rerun runs the same servers and clients.
func rerunCommand(r *Report) string {
	cmd := r.Rerun
	if !strings.HasPrefix(cmd, "chaoslab run ") {
		return cmd
	}
	if r.Backend != "" {
		switch m := placementFlag.FindStringSubmatchIndex(cmd); {
		case m == nil:
			cmd += " --placement " + r.Backend
		case cmd[m[4]:m[5]] == "auto": // the placement auto chose
			cmd = cmd[:m[0]] + "--placement " + r.Backend + cmd[m[1]:]
		}
	}
	var names []string
	for k := range r.Versions {
		if name, ok := strings.CutPrefix(k, "image "); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		ref := strings.TrimSpace(r.Versions["image "+name])
		switch {
		case ref == "" || strings.ContainsAny(ref, " \t'\""):
		case strings.Contains(cmd, "--image "+name+"="):
		case name == "user-client" && strings.Contains(cmd, "--client-image"):
		default:
			cmd += " --image " + name + "=" + ref
		}
	}
	return cmd
}
