package seeds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LoadDir reads the case records of a folder (its *.yaml and *.yml files,
// not below) or of one file, and validates each (LoadFile: errors name
// the files by their paths). Unlike the built-in records, a file need not
// be named after its id; two records with the same id (in any case) are
// an error. Records are sorted by id.
//
// A scenario file in the folder is skipped, and skipped says so, a line
// for each; a scenario given as the one file is an error saying it is one.
func LoadDir(path string) (recs []Record, skipped []string, err error) {
	files, dir, err := recordFiles(path)
	if err != nil {
		return nil, nil, err
	}
	var (
		errs []error
		seen = map[string]string{}
	)
	for _, f := range files {
		r, err := LoadFile(f)
		if dir && errors.Is(err, ErrScenario) {
			skipped = append(skipped, fmt.Sprintf("%s: skipped: a scenario, not a case record", f))
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := strings.ToUpper(r.ID)
		if other, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s: id %q already used by %s", r.File(), r.ID, other))
			continue
		}
		seen[key] = r.File()
		recs = append(recs, r)
	}
	if len(errs) > 0 {
		return nil, skipped, errors.Join(errs...)
	}
	if dir && len(recs) == 0 && len(skipped) > 0 {
		return nil, skipped, fmt.Errorf("load case records: %s holds scenarios only, no case record", path)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, skipped, nil
}

// recordFiles is path when it is a file, else its YAML files (dir true).
func recordFiles(path string) ([]string, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("load case records: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, false, nil
	}
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(path, pat))
		if err != nil {
			return nil, true, fmt.Errorf("load case records: %w", err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, true, fmt.Errorf("load case records: no *.yaml file in %s", path)
	}
	sort.Strings(files)
	return files, true, nil
}
