package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPauseImageArchive checks the docker-save archive of the pause image
// (what ctr images import reads): a manifest naming PauseRef, a config
// whose layer digest is the layer's, the binary as /pause, its entrypoint.
func TestPauseImageArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pause.tar")
	if err := writePauseImage(path, bin, "amd64"); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, path)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest.json: %s (%v)", files["manifest.json"], err)
	}
	m := manifest[0]
	if len(m.RepoTags) != 1 || m.RepoTags[0] != PauseRef {
		t.Errorf("RepoTags %v, want [%s]", m.RepoTags, PauseRef)
	}
	var config struct {
		Architecture, OS string
		Config           struct{ Entrypoint []string }
		RootFS           struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(files[m.Config], &config); err != nil {
		t.Fatalf("config %s: %v", m.Config, err)
	}
	sum := sha256.Sum256(files[m.Config])
	if want := hex.EncodeToString(sum[:]) + ".json"; m.Config != want {
		t.Errorf("config named %s, want its digest %s", m.Config, want)
	}
	layer := files[m.Layers[0]]
	sum = sha256.Sum256(layer)
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("diff_ids %v, want the layer's digest", config.RootFS.DiffIDs)
	}
	if config.Architecture != "amd64" || config.OS != "linux" || strings.Join(config.Config.Entrypoint, " ") != "/pause" {
		t.Errorf("config %s", files[m.Config])
	}
	l := filepath.Join(dir, "layer.tar")
	os.WriteFile(l, layer, 0o644)
	if got := readTar(t, l)["pause"]; string(got) != "\x7fELF not really" {
		t.Errorf("layer: pause holds %q", got)
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
}
