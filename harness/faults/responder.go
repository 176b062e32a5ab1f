package faults

import "strings"

// ResponderAction is implemented by a fault that, taken as an operator's
// action, is one of the things an incident's responders did
// (seeds.ResponderKinds): a trainee's actions are matched against the
// responders' by it.
type ResponderAction interface {
	// ResponderKind is the kind of responders' action this fault is on
	// the target selector given, or "" when it is none.
	ResponderKind(target string) string
}

// ResponderKind is what the named fault on target does as a responders'
// action, or "" when it is none or the fault is not registered.
func ResponderKind(fault, target string) string {
	f, err := New(fault)
	if err != nil {
		return ""
	}
	if r, ok := f.(ResponderAction); ok {
		return r.ResponderKind(target)
	}
	return ""
}

// selects reports whether target selects the group or role named (with
// or without a count: clients, clients:50%, leader).
func selects(target, name string) bool {
	head, _, _ := strings.Cut(target, ":")
	return head == name || head == strings.TrimSuffix(name, "s") || head+"s" == name
}

// ResponderKind: killing the leader forces an election.
func (*KillRestart) ResponderKind(target string) string {
	if selects(target, "leader") {
		return "leader-election"
	}
	return ""
}

// ResponderKind: stopping the clients cuts their connections.
func (*Stop) ResponderKind(target string) string {
	if selects(target, "clients") {
		return "stop-clients"
	}
	return ""
}
