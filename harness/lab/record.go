package lab

import "github.com/chaoslab/chaoslab/record"

// The record of a run: what the plug-ins collect, what reports keep.
type (
	FaultWindow = record.FaultWindow
	Proof       = record.Proof
	Event       = record.Event
	Series      = record.Series
	Point       = record.Point
	Instance    = record.Instance
	Exit        = record.Exit
	Limit       = record.Limit
	Fact        = record.Fact
	Result      = record.Result
)

// Pt is record.Pt.
var Pt = record.Pt

// FormatMB is record.FormatMB.
var FormatMB = record.FormatMB
