package seeds

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The case records a user gives beside the built-in ones: those of
// chaoslab's --cases (Register), found by id, and the files LoadFile has
// read (a scenario's case: path.yaml), found by path. Get consults both,
// so that every lookup (a report's title, sources and figures, show,
// train) finds a user's record as it finds a built-in one.
var registry struct {
	sync.Mutex
	byID   map[string]Record // upper-case id -> record of Register
	byFile map[string]Record // cleaned path -> record LoadFile read
}

// Register makes records of a user's own known beside the built-in ones:
// Get finds them by id and Known lists them. A record with a built-in
// record's id, or with the id of one registered from another file, is
// refused, and then none is registered; registering a record again from
// the same file replaces it.
func Register(recs ...Record) error {
	builtin, err := All()
	if err != nil {
		return err
	}
	registry.Lock()
	defer registry.Unlock()
	batch := map[string]Record{}
	for _, r := range recs {
		key := strings.ToUpper(strings.TrimSpace(r.ID))
		for _, b := range builtin {
			if strings.EqualFold(b.ID, key) {
				return fmt.Errorf("%s: id %s is a built-in case record's: give yours an id of its own", r.fileName(), r.ID)
			}
		}
		for _, other := range []map[string]Record{registry.byID, batch} {
			if o, ok := other[key]; ok && o.file != r.file {
				return fmt.Errorf("%s: id %s is already that of %s", r.fileName(), r.ID, o.fileName())
			}
		}
		batch[key] = r
	}
	if registry.byID == nil {
		registry.byID = map[string]Record{}
	}
	for k, r := range batch {
		registry.byID[k] = r
	}
	return nil
}

// Registered returns the records Register made known, sorted by id.
func Registered() []Record {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Record, 0, len(registry.byID))
	for _, r := range registry.byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ResetRegistered forgets the records Register made known and the files
// LoadFile read (a new command's --cases; a test's).
func ResetRegistered() {
	registry.Lock()
	defer registry.Unlock()
	registry.byID, registry.byFile = nil, nil
}

// Known returns the built-in records and the registered ones, sorted by
// id.
func Known() ([]Record, error) {
	recs, err := All()
	if err != nil {
		return nil, err
	}
	recs = append(recs, Registered()...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
}

// remember keeps a record LoadFile read, by its path.
func remember(path string, r Record) {
	registry.Lock()
	defer registry.Unlock()
	if registry.byFile == nil {
		registry.byFile = map[string]Record{}
	}
	registry.byFile[filepath.Clean(path)] = r
}

// IsPath says whether a case reference names a file (a path, or a name
// ending in .yaml or .yml) rather than a case id, as a scenario's case:
// does.
func IsPath(ref string) bool {
	return strings.ContainsAny(ref, `/\`) || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml")
}

// Get returns a case record: by id (in any case), a built-in one or one
// Register made known; by path (IsPath), the record of that file: one
// LoadFile has read, named by the path it was given or, as a scenario's
// case: names it relative to the scenario's folder, by the end of that
// path; else the file read now.
func Get(ref string) (Record, error) {
	ref = strings.TrimSpace(ref)
	if IsPath(ref) {
		if r, ok, err := byPath(ref); ok || err != nil {
			return r, err
		}
		return LoadFile(ref)
	}
	recs, err := All()
	if err != nil {
		return Record{}, err
	}
	for _, r := range recs {
		if strings.EqualFold(r.ID, ref) {
			return r, nil
		}
	}
	registry.Lock()
	r, ok := registry.byID[strings.ToUpper(ref)]
	registry.Unlock()
	if ok {
		return r, nil
	}
	known, err := Known()
	if err != nil {
		return Record{}, err
	}
	ids := make([]string, len(known))
	for i, r := range known {
		ids[i] = r.ID
	}
	return Record{}, fmt.Errorf("seeds: unknown case %q (known: %s); a case record of your own is given with --cases DIR (a folder or file of records) or named by its file in the scenario (case: path.yaml)",
		ref, strings.Join(ids, ", "))
}

// byPath finds a record LoadFile read by its path, or by the end of it.
func byPath(ref string) (Record, bool, error) {
	want := filepath.Clean(ref)
	tail := want
	for strings.HasPrefix(tail, ".."+string(filepath.Separator)) {
		tail = tail[3:]
	}
	registry.Lock()
	defer registry.Unlock()
	if r, ok := registry.byFile[want]; ok {
		return r, true, nil
	}
	var found []string
	for p := range registry.byFile {
		if !filepath.IsAbs(tail) && strings.HasSuffix(p, string(filepath.Separator)+tail) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return Record{}, false, nil
	case 1:
		return registry.byFile[found[0]], true, nil
	}
	sort.Strings(found)
	return Record{}, false, fmt.Errorf("seeds: case record %s: ambiguous, %s were read", ref, strings.Join(found, " and "))
}
