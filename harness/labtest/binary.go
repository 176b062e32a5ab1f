package labtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ChaoslabBinary builds the chaoslab command once per test binary: its
// agents (the built-in clients) run as processes of it.
func ChaoslabBinary() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chaoslab-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "chaoslab")
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", binPath, "github.com/chaoslab/chaoslab/cmd/chaoslab").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	return binPath, buildErr
}
