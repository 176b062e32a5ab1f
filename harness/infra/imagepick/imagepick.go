// Package imagepick chooses the image a container placement (the local
// engine's, a Kubernetes cluster's) runs for each image a run needs, in
// one order for every placement, and keeps the choices for the report.
package imagepick

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Choose picks n's image: --image NAME=REF (overrides), then
// CHAOSLAB_<NAME>_IMAGE, then the scenario's, then the first default that
// present finds (where says where it looked: "present here"). It returns
// "" with no error when no default is present; env is the variable that
// would name one.
func Choose(n lab.ImageNeed, overrides map[string]string, present func(ref string) (bool, error), where string) (ref, why, env string, err error) {
	if n.Name == lab.AgentImage && len(n.Defaults) == 0 {
		n.Defaults = []string{images.ChaoslabRef("")}
	}
	env = EnvName(n.Name)
	switch {
	case overrides[n.Name] != "":
		return overrides[n.Name], "--image", env, nil
	case os.Getenv(env) != "":
		return os.Getenv(env), env, env, nil
	case n.Ref != "":
		return n.Ref, "the scenario's", env, nil
	}
	for _, d := range n.Defaults {
		ok, err := present(d)
		if err != nil {
			return "", "", env, err
		}
		if ok {
			return d, "default, " + where, env, nil
		}
	}
	return "", "", env, nil
}

// EnvName is the variable that names an image for a need: CHAOSLAB_<NAME>_IMAGE.
func EnvName(name string) string { return "CHAOSLAB_" + strings.ToUpper(name) + "_IMAGE" }

// Record keeps the images chosen for a run, with why each was.
type Record struct {
	mu     sync.Mutex
	images map[string]string // name -> ref
	why    []string
}

// Keep records ref as name's image; the first reason given is kept.
func (r *Record) Keep(name, ref, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.images == nil {
		r.images = map[string]string{}
	}
	if _, seen := r.images[name]; !seen {
		r.why = append(r.why, fmt.Sprintf("%s %s (%s)", name, ref, why))
	}
	r.images[name] = ref
}

// Image is the image kept for name ("" when none was).
func (r *Record) Image(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images[name]
}

// Why says which images the run uses and why, for the report.
func (r *Record) Why() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.why) == 0 {
		return ""
	}
	return "images: " + strings.Join(r.why, ", ")
}

// Versions are the images as a report's versions ("image NAME": ref).
func (r *Record) Versions() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, v := range r.images {
		out["image "+k] = v
	}
	return out
}
