// Package reports writes a run's record out for people: report.md, a
// self-contained index.html with the charts the plug-ins declare, a JUnit
// file, a console summary. The record itself (report.json: its types,
// load, save, judgement) is package record's.
package reports

import "github.com/chaoslab/chaoslab/record"

// The record's types, as the renderers and their callers name them.
type (
	Report             = record.Report
	CaseRef            = record.CaseRef
	Source             = record.Source
	Host               = record.Host
	VariantResult      = record.VariantResult
	Timing             = record.Timing
	Parameter          = record.Parameter
	FaultWindow        = record.FaultWindow
	Event              = record.Event
	Series             = record.Series
	Point              = record.Point
	ClientSummary      = record.ClientSummary
	Exit               = record.Exit
	EvidenceRow        = record.EvidenceRow
	Debrief            = record.Debrief
	DebriefPrediction  = record.DebriefPrediction
	DebriefDiagnosis   = record.DebriefDiagnosis
	DebriefAction      = record.DebriefAction
	DebriefTimelineRow = record.DebriefTimelineRow
	Link               = record.Link
	IncidentRow        = record.IncidentRow
	Map                = record.Map
	ScenarioInfo       = record.ScenarioInfo
	MetricSource       = record.MetricSource
)

// SchemaVersion identifies the report.json format.
const SchemaVersion = record.SchemaVersion

// Load is record.Load.
var Load = record.Load

// CaseRefFor is record.CaseRefFor.
var CaseRefFor = record.CaseRefFor

// PublishedFigure is record.PublishedFigure.
var PublishedFigure = record.PublishedFigure

// WithPublished is record.WithPublished.
var WithPublished = record.WithPublished
