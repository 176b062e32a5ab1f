package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Reference returns reference.md: every system's topology, every workload
// kind's settings, series and metrics, every fault's parameters, with their
// defaults and descriptions, generated from the plug-ins linked in (as
// schema.json is). srcRoot is the repository's folder.
func Reference(srcRoot string) ([]byte, error) {
	r := reflector()
	if err := r.AddGoComments("github.com/chaoslab/chaoslab/scenarios", srcRoot); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Plug-in reference\n\nGenerated from the registered plug-ins by `go generate ./scenarios`; do not edit. ")
	p("See README.md for the format and harness/lab/GUIDE.md for adding a plug-in.\n\n")
	p("## Systems (`system:` and `topology.<system>`)\n\n")
	for _, name := range lab.SystemNames() {
		sys, _ := lab.GetSystem(name)
		p("### %s\n\nRoles: %s. Sampled every %s.\n\n", name, strings.Join(sys.Roles(), ", "), sys.SampleEvery())
		settingsTable(&b, settingsSchema(r, sys.NewTopology()), "")
		seriesAndMetrics(&b, sys.Series(), sys.Metrics())
	}
	p("## Workload kinds (`workload.kind`)\n\n")
	for _, name := range lab.KindNames() {
		k, _ := lab.GetKind(name)
		one, many := k.Noun()
		groups := "none"
		if len(k.Groups()) > 0 {
			groups = "`" + strings.Join(k.Groups(), "`, `") + "`"
		}
		p("### %s\n\nRuns against %s; its instances are %s (one %s); fault target groups: %s.\n\n", name, strings.Join(k.Systems(), ", "), many, one, groups)
		settingsTable(&b, settingsSchema(r, k.NewSettings()), "")
		seriesAndMetrics(&b, k.Series(), k.Metrics())
	}
	p("## Faults (`timeline.faults[].fault` and `params`)\n\n")
	for _, name := range faults.Names() {
		f, _ := faults.New(name)
		s := settingsSchema(r, f)
		p("### %s\n\n%s\n\n", name, strings.TrimSpace(s.Description))
		if s.Properties == nil || s.Properties.Len() == 0 {
			p("No parameters.\n\n")
			continue
		}
		settingsTable(&b, s, "")
	}
	p("## The pipeline's own series and metrics (every scenario)\n\n")
	seriesAndMetrics(&b, lab.PipelineSeries(), lab.PipelineMetrics())
	return b.Bytes(), nil
}

// settingsTable lists a settings schema's properties, nested ones by path.
func settingsTable(b *bytes.Buffer, s *jsonschema.Schema, prefix string) {
	if prefix == "" {
		b.WriteString("| key | default | meaning |\n|---|---|---|\n")
	}
	if s.Properties == nil {
		return
	}
	for pr := s.Properties.Oldest(); pr != nil; pr = pr.Next() {
		key, v := prefix+pr.Key, pr.Value
		if v.Properties != nil && v.Properties.Len() > 0 {
			settingsTable(b, v, key+".")
			continue
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", key, defaultText(v.Default), cell(v.Description))
	}
	if prefix == "" {
		b.WriteString("\n")
	}
}

func seriesAndMetrics(b *bytes.Buffer, series []lab.SeriesDef, metrics []lab.MetricDef) {
	if len(series) > 0 {
		b.WriteString("| series | unit | chart |\n|---|---|---|\n")
		for _, s := range series {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", s.Name, s.Unit, cell(s.Title))
		}
		b.WriteString("\n")
	}
	if len(metrics) == 0 {
		return
	}
	ms := append([]lab.MetricDef(nil), metrics...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	b.WriteString("| metric | unit | how | meaning |\n|---|---|---|---|\n")
	for _, m := range ms {
		how := "computed"
		if m.Reducer != nil {
			how = "`" + m.Reducer.Name() + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", m.Name, m.Unit, how, cell(m.Doc))
	}
	b.WriteString("\n")
}

func defaultText(v any) string {
	if v == nil {
		return "—"
	}
	j, err := json.Marshal(v)
	if err != nil || string(j) == `""` {
		return "—"
	}
	return "`" + strings.Trim(string(j), `"`) + "`"
}

func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}
