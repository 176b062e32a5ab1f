package runner

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// gzipAbove is the size above which a log no report links to is
// compressed at the end of its variant (a server's log: ~160 KB a
// minute for ZooKeeper).
const gzipAbove = 64 << 10

// tidy leaves the variant's folder as a report needs it, once its servers
// have stopped: their data directories removed (unless the run keeps
// them), large logs compressed.
func (v *variant) tidy(data []string) {
	if !v.o.KeepData {
		for _, d := range data {
			if err := os.RemoveAll(d); err != nil {
				v.log.Warn("remove data directory", "dir", d, "err", err)
			}
		}
	}
	if err := compressLogs(filepath.Join(v.dir, "logs"), v.linkedLogs()); err != nil {
		v.log.Warn("compress logs", "err", err)
	}
}

// linkedLogs are the logs the report links to one by one (an instance's),
// by absolute path: they stay as they are.
func (v *variant) linkedLogs() map[string]bool {
	out := map[string]bool{}
	run := filepath.Dir(v.dir)
	for _, in := range v.vr.Clients {
		if in.Log != "" {
			out[filepath.Join(run, in.Log)] = true
		}
	}
	return out
}

// compressLogs gzips every log in dir larger than gzipAbove that is not
// linked: name.log becomes name.log.gz.
func compressLogs(dir string, linked map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("read log dir: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() <= gzipAbove || linked[path] || filepath.Ext(path) == ".gz" {
			continue
		}
		if err := gzipFile(path); err != nil {
			return err
		}
	}
	return nil
}

// gzipFile replaces path with path.gz.
func gzipFile(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer in.Close()
	out, err := os.Create(path + ".gz")
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path + ".gz")
		return fmt.Errorf("compress log %s: %w", filepath.Base(path), err)
	}
	return os.Remove(path)
}
