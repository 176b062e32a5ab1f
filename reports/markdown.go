package reports

import (
	"fmt"
	"strings"
)

// markdown renders the report as report.md.
func markdown(v *view) string {
	var b strings.Builder
	mdHead(&b, v)
	mdRun(&b, v)
	for _, vv := range v.Variants {
		mdVariant(&b, vv)
	}
	mdJudged(&b, v)
	mdSimulated(&b, v)
	mdTail(&b, v)
	return b.String()
}

// mdHead is the title, the sources and the verdict.
func mdHead(b *strings.Builder, v *view) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("# %s\n\n", mdText(v.Title))
	var sub []string
	if v.CaseID != "" {
		sub = append(sub, "Case **"+mdText(v.CaseID)+"**")
	}
	if v.ScenarioID != "" {
		sub = append(sub, "scenario `"+v.ScenarioID+"`")
	}
	if len(sub) > 0 {
		p("%s\n\n", strings.Join(sub, " · "))
	}
	if v.CaseTitle != "" && v.CaseTitle != v.Title {
		p("_%s_\n\n", mdText(v.CaseTitle))
	}
	p("%s\n\n", mdSources(v))

	p("## Verdict: **%s**\n\n", v.Verdict)
	if v.VerdictMeaning != "" {
		p("%s\n\n", v.VerdictMeaning)
	}
	switch {
	case v.Story != "":
		p("%s\n\n", mdText(v.Story))
	case v.Reason != "":
		p("> %s\n\n", mdText(v.Reason))
	}
	if len(v.NearMisses) > 0 {
		p("⚠️ **Near miss** (within %sx of the threshold: another run could go the other way): %s.\n\n", v.NearFactor, mdText(strings.Join(v.NearMisses, "; ")))
	}
	if v.ExpectationMet {
		p("✅ %s\n\n", v.Expectation)
	} else {
		p("⚠️ **%s**\n\n", v.Expectation)
	}
	if len(v.Glance) > 0 {
		p("| Variant | Expected | Verdict | As expected |\n|---|---|---|---|\n")
		for _, g := range v.Glance {
			p("| %s | %s | **%s** | %s |\n", mdCell(g.Variant), mdCell(g.Expect), g.Verdict, g.AsExpected)
		}
		p("\n")
	}
	if v.Description != "" {
		p("%s\n\n", mdText(v.Description))
	}
}

// mdRun is the run's facts and versions.
func mdRun(b *strings.Builder, v *view) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Run\n\n| | |\n|---|---|\n")
	for _, f := range v.Facts {
		p("| %s | %s |\n", f.K, mdCell(f.V))
	}
	p("\n")
	if len(v.Versions) > 0 {
		p("### Versions\n\n| Component | Version |\n|---|---|\n")
		for _, f := range v.Versions {
			p("| %s | %s |\n", mdCell(f.K), mdCell(f.V))
		}
		p("\n")
	}
}

// mdVariant is one variant: its verdict, settings, hypotheses, faults, events and clients.
func mdVariant(b *strings.Builder, vv variantView) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Variant `%s`: %s\n\n", vv.Name, vv.Verdict)
	if vv.Description != "" {
		p("%s\n\n", mdText(vv.Description))
	}
	p("Verdict **%s** (expected %s, as expected: %s)", vv.Verdict, vv.Expect, vv.AsExpected)
	if vv.Reason != "" {
		p(": %s", mdText(vv.Reason))
	}
	p("\n\nStarted %s.\n\n", vv.StartedAt)
	if vv.Steady != "" {
		p("%s\n\n", mdText(vv.Steady))
	}

	p("### %s\n\n| | |\n|---|---|\n", vv.WorkloadTitle)
	for _, f := range vv.Workload {
		p("| %s | %s |\n", f.K, mdCell(f.V))
	}
	p("\n")

	p("### Hypotheses\n\n")
	checkTable(b, vv.Hypotheses, "Hypothesis")

	p("### Fault windows\n\n")
	if len(vv.Faults) == 0 {
		p("No fault was injected.\n\n")
	} else {
		p("| Fault | Target | Member | From (%s) | To | Landed (read back) | Detail |\n|---|---|---|---|---|---|---|\n", vv.Clock)
		for _, f := range vv.Faults {
			p("| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(f.Fault), mdCell(f.Target), mdCell(f.Member), f.From, f.To, mdCell(f.Landed), mdCell(f.Detail))
		}
		p("\n")
	}

	p("### Notable events\n\n")
	if len(vv.Events) == 0 {
		p("No OOM kill, client exit or leader change.\n\n")
	} else {
		p("| t (%s) | Event | Source | Detail |\n|---|---|---|---|\n", vv.Clock)
		for _, e := range vv.Events {
			p("| %s | %s | %s | %s |\n", e.T, e.Kind, mdCell(e.Source), mdCell(e.Detail))
		}
		if vv.EventsMore > 0 {
			p("\n… and %d more in report.json.\n", vv.EventsMore)
		}
		p("\n")
	}

	if vv.Simulated && len(vv.Clients) == 0 {
		return
	}
	p("### %s\n\n", vv.WhoAll)
	if len(vv.Clients) == 0 {
		p("No client summary was recorded.\n\n")
	} else {
		p("| %s | Starts | Exits | OOM kills | Peak memory charged (MiB) | Peak RSS (MiB) | Requests | Reconnects | Log |\n|---|---|---|---|---|---|---|---|---|\n", vv.Who)
		for _, c := range vv.Clients {
			log := "—"
			if c.Log != "" {
				log = mdLink(c.Log)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(c.ID), c.Starts, mdCell(c.Exits), c.OOMKills, c.PeakCharged, c.PeakRSS, c.Requests, c.Reconnects, log)
		}
		p("\n")
	}
	if vv.LogDir != "" {
		p("Logs: %s\n\n", mdLink(vv.LogDir))
	}
}

// mdJudged is the comparisons and the evidence.
func mdJudged(b *strings.Builder, v *view) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Comparisons\n\n")
	if len(v.Comparisons) == 0 {
		p("No comparison across variants in this run.\n\n")
	} else {
		checkTable(b, v.Comparisons, "Comparison")
	}

	p("## Evidence\n\n")
	if len(v.Evidence) == 0 {
		p("The scenario maps no statement of the write-up to a measurement.\n\n")
	} else {
		p("| What the write-up says | The write-up's figure | Metric |")
		for _, c := range v.EvidenceCol {
			p(" %s |", mdCell(c))
		}
		p(" Set against | Agreement band | Match |\n|---|---|---|%s---|---|---|\n", strings.Repeat("---|", len(v.EvidenceCol)))
		for _, e := range v.Evidence {
			p("| %s | %s | `%s` |", mdCell(e.Incident), mdCell(e.Published), e.Metric)
			for _, x := range e.Values {
				p(" %s |", x)
			}
			p(" %s | %s | %s |\n", mdCell(e.Variant), e.Band, e.Result)
		}
		p("\n")
	}
}

// mdSimulated is a simulated run's comparison with the incident and its maps.
func mdSimulated(b *strings.Builder, v *view) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if len(v.Incident) > 0 {
		p("## %s\n\n", v.IncidentTitle)
		p("| %s | %s | Variant | Metric | Simulated | Agreement band | Result |\n|---|---|---|---|---|---|---|\n", v.IncidentWhat, v.IncidentPub)
		for _, r := range v.Incident {
			inc := r.Incident
			if r.Note != "" {
				inc += " (" + r.Note + ")"
			}
			p("| %s | %s | %s | `%s` | %s | %s | %s |\n", mdCell(inc), mdCell(r.Published), r.Variant, r.Metric, r.Simulated, r.Band, r.Result)
		}
		p("\n")
	}
	if len(v.Maps) > 0 {
		p("## Metastability maps\n\n")
		for _, m := range v.Maps {
			p("### %s\n\n%s\n\n```\n%s```\n\n", mdText(m.Title), mdText(m.Caption), m.Text)
			if m.Note != "" {
				p("%s\n\n", mdText(m.Note))
			}
		}
	}
}

// mdTail is how to rerun, how to read and the logs.
func mdTail(b *strings.Builder, v *view) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## How to rerun\n\n")
	if v.Rerun != "" {
		p("```sh\n%s\n```\n\n", v.Rerun)
	} else {
		p("No rerun command was recorded.\n\n")
	}

	p("## How to read this report\n\n")
	for _, para := range v.HowTo {
		p("%s\n\n", para)
	}

	p("## Logs\n\n")
	if len(v.Logs) == 0 {
		p("No log directory was recorded.\n\n")
	} else {
		p("Server and client logs, relative to this report:\n\n")
		for _, l := range v.Logs {
			p("- %s: %s\n", mdText(l.K), mdLink(l.V))
		}
		p("\n")
	}
	p("The full record is [report.json](report.json); [index.html](index.html) shows this report with charts.\n")
}

func checkTable(b *strings.Builder, rows []checkRow, what string) {
	if len(rows) == 0 {
		fmt.Fprintf(b, "None.\n\n")
		return
	}
	fmt.Fprintf(b, "| %s | Metric | Want | Observed | Margin | Result |\n|---|---|---|---|---|---|\n", what)
	for _, c := range rows {
		id := "**" + mdCell(c.ID) + "**"
		if c.Description != "" {
			id += " — " + mdCell(c.Description)
		}
		result := c.Result
		if c.Result == "violated" {
			result = "**violated**"
		}
		margin := c.Margin
		if c.Near {
			margin += " ⚠️ near miss"
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s |\n", id, c.Metric, mdCell(c.Want), c.Observed, mdCell(margin), result)
	}
	b.WriteString("\n")
}

// mdSources is the case record and the write-up's sources, one line.
func mdSources(v *view) string {
	var parts []string
	if v.Record != "" {
		parts = append(parts, "Case record `"+v.Record+"`")
	}
	for _, s := range v.Sources {
		src := "source <" + s.URL + ">"
		if s.Archived != "" {
			src += " ([archived copy](" + s.Archived + "))"
		}
		parts = append(parts, src)
	}
	if len(parts) == 0 {
		return "No case record is linked."
	}
	return strings.Join(parts, " · ")
}

// mdLink links a path of the run folder: [path](path).
func mdLink(path string) string {
	return "[" + path + "](" + path + ")"
}

// mdText keeps free text on one paragraph line.
func mdText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mdCell makes text safe inside a table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(mdText(s), "|", `\|`)
}
