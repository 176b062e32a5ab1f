package reports

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaoslab/chaoslab/verdict"
)

// JUnit XML, as CI servers read it: a test suite per run, a test case per
// variant (did it reach its expected verdict?) and per hypothesis of a
// variant expected to hold (did it hold?). A vulnerable variant's
// violated hypotheses are the incident reproducing, not failures: their
// cases pass and say so.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class     string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the runs' results as JUnit XML to path.
func WriteJUnit(path string, runs []*Report) error {
	out := junitSuites{Name: "chaoslab"}
	for _, r := range runs {
		s := junitSuiteOf(r)
		out.Suites = append(out.Suites, s)
		out.Tests += s.Tests
		out.Failures += s.Failures
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

func junitSuiteOf(r *Report) junitSuite {
	id := r.RunID
	if r.Scenario != nil {
		id = r.Scenario.ID
	}
	s := junitSuite{Name: fmt.Sprintf("%s seed %d", id, r.Seed), Timestamp: r.StartedAt.UTC().Format("2006-01-02T15:04:05"),
		Time:       fmt.Sprintf("%.1f", r.EndedAt.Sub(r.StartedAt).Seconds()),
		Properties: []junitProperty{{"report", filepath.Join(r.Dir, "index.html")}, {"verdict", string(r.Verdict)}, {"seed", fmt.Sprint(r.Seed)}}}
	add := func(c junitCase) {
		s.Cases = append(s.Cases, c)
		s.Tests++
		if c.Failure != nil {
			s.Failures++
		}
	}
	for _, v := range r.Variants {
		class := id + "." + v.Name
		c := junitCase{Class: class, Name: fmt.Sprintf("reaches %s", orDash(string(v.Expect))), Time: fmt.Sprintf("%.1f", v.Timing.WallS),
			SystemOut: v.Reason + "\nreport: " + filepath.Join(r.Dir, "index.html")}
		if v.Verdict != v.Expect {
			c.Failure = &junitFailure{Message: fmt.Sprintf("%s, expected %s: %s", v.Verdict, v.Expect, v.Reason), Type: string(v.Verdict), Text: c.SystemOut}
		}
		add(c)
		for _, h := range v.Hypotheses {
			add(hypothesisCase(class, v, h))
		}
	}
	for _, cmp := range r.Comparisons {
		c := junitCase{Class: id + ".comparisons", Name: cmp.ID, SystemOut: cmp.String()}
		if !cmp.Held {
			c.Failure = &junitFailure{Message: cmp.String(), Type: "comparison"}
		}
		add(c)
	}
	return s
}

func hypothesisCase(class string, v *VariantResult, h verdict.Check) junitCase {
	c := junitCase{Class: class, Name: "hypothesis " + h.ID, SystemOut: h.String()}
	if v.Expect == verdict.Held && !h.Held && !(h.Missing && h.Optional) {
		c.Failure = &junitFailure{Message: h.String(), Type: "violated", Text: strings.TrimSpace(h.Description)}
	}
	if v.Expect == verdict.Violated && !h.Held {
		c.SystemOut += " (the incident, as expected of this variant)"
	}
	return c
}
