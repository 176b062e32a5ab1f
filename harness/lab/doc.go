// Package lab is chaoslab's vocabulary: the small interfaces every plug-in
// implements (System, Placement, Kind of workload), their registries, the
// environment a variant hands them (Env), target selectors, metrics as data
// (series and reducers), and the records a run keeps (series, events,
// instances). It depends on no plug-in; plug-ins register themselves by
// name from an init function, and harness/plugins links them all in.
//
// One pipeline (harness/runner) drives every scenario through these
// interfaces: system up, seed, workload up, warm-up, fault timeline,
// observe, collect, verdict, report. GUIDE.md beside this file says how to
// add a system, a placement, a workload kind, a fault and a metric.
package lab
