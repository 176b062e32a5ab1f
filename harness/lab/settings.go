package lab

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Settings are a plug-in's typed settings (a system's topology, a
// workload kind's settings), decoded strictly from the scenario into the
// value its constructor returned, so the constructor's values are the
// defaults: each setting is declared once, as a field with a yaml tag and
// a comment, with one default.
type Settings interface {
	// Check returns what is wrong with the values, each problem naming
	// its field by its yaml path below the settings ("tree.fanout[1]").
	Check() []Problem
}

// Problem is one invalid setting.
type Problem struct {
	Field string
	Msg   string
}

// Problemf makes a Problem.
func Problemf(field, format string, args ...any) Problem {
	return Problem{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Checks collects problems: c.Need(ok, field, msg, args...).
type Checks []Problem

// Need records a problem when ok is false.
func (c *Checks) Need(ok bool, field, format string, args ...any) {
	if !ok {
		*c = append(*c, Problemf(field, format, args...))
	}
}

// Under prefixes the problems' fields with a parent path.
func Under(prefix string, ps []Problem) []Problem {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		out[i] = p
		if prefix != "" {
			out[i].Field = strings.TrimSuffix(prefix+"."+p.Field, ".")
		}
	}
	return out
}

// Describer is implemented by settings that say what they mean in a
// report (Facts), e.g. "Window: 8 requests in flight per client".
type Describer interface {
	Facts() []Fact
}

// Encode is a settings value as the JSON document a report (or an agent
// process) receives.
func Encode(s any) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("{%q:%q}", "error", err.Error()))
	}
	return b
}
