package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

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
		writeSettings(&b, settingRows(settingsSchema(r, sys.NewTopology()), ""))
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
		writeSettings(&b, settingRows(settingsSchema(r, k.NewSettings()), ""))
		seriesAndMetrics(&b, k.Series(), k.Metrics())
	}
	p("## Faults (`timeline.faults[].fault` and `params`)\n\n")
	for _, name := range faults.Names() {
		f, _ := faults.New(name)
		d := faultDoc(name, settingsSchema(r, f))
		p("### %s\n\n%s\n\n", name, d.Doc)
		if len(d.Params) == 0 {
			p("No parameters.\n\n")
			continue
		}
		writeSettings(&b, d.Params)
	}
	p("## The pipeline's own series and metrics (every scenario)\n\n")
	seriesAndMetrics(&b, lab.PipelineSeries(), lab.PipelineMetrics())
	return b.Bytes(), nil
}

// writeSettings is a table of settings.
func writeSettings(b *bytes.Buffer, rows []Setting) {
	b.WriteString("| key | default | meaning |\n|---|---|---|\n")
	for _, s := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", s.Key, defaultText(s.Default), cell(s.Doc))
	}
	b.WriteString("\n")
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
	b.WriteString("| metric | unit | how | meaning |\n|---|---|---|---|\n")
	for _, m := range MetricDocs(metrics) {
		how := m.How
		if how != "computed" {
			how = "`" + how + "`"
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
