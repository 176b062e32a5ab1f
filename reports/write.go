package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write saves the report into dir: report.json (r.Save), report.md and a
// self-contained index.html with the charts.
func Write(r *Report, dir string) error {
	if r == nil {
		return errors.New("write report: no report")
	}
	r.Rerun = rerunCommand(r)
	if err := r.Save(dir); err != nil {
		return wrapWrite(err)
	}
	v := newView(r)
	if err := writeFileAtomic(filepath.Join(dir, "report.md"), []byte(markdown(v))); err != nil {
		return wrapWrite(err)
	}
	charts, err := buildCharts(r)
	if err != nil {
		return wrapWrite(err)
	}
	v.Charts = charts
	v.ChartNote = alignOnFirstFault(r).note()
	page, err := htmlPage(v)
	if err != nil {
		return wrapWrite(fmt.Errorf("render index.html: %w", err))
	}
	if err := writeFileAtomic(filepath.Join(dir, "index.html"), page); err != nil {
		return wrapWrite(err)
	}
	return nil
}

// wrapWrite prefixes "write report: " once.
func wrapWrite(err error) error {
	if strings.HasPrefix(err.Error(), "write report:") {
		return err
	}
	return fmt.Errorf("write report: %w", err)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
