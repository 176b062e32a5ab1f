package container

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/images"
)

// A held program runs what the engine would have run: the image's
// entrypoint kept in front of the command, the image's command when the
// program has none, and neither of the image's when the program names its
// own entrypoint.
func TestHeldArgv(t *testing.T) {
	for _, c := range []struct {
		name                         string
		imgEntry, imgCmd, entry, cmd []string
		want                         []string
	}{
		{"entrypoint kept", []string{"/app"}, []string{"-default"}, nil, []string{"-keep"}, []string{"/app", "-keep"}},
		{"no entrypoint", nil, []string{"bash"}, nil, []string{"python3", "-c", "x"}, []string{"python3", "-c", "x"}},
		{"image's command", []string{"/app"}, []string{"-default"}, nil, nil, []string{"/app", "-default"}},
		{"image's command alone", nil, []string{"python3"}, nil, nil, []string{"python3"}},
		{"program's entrypoint", []string{"/app"}, []string{"-default"}, []string{"/bin/x"}, nil, []string{"/bin/x"}},
		{"program's entrypoint and command", []string{"/app"}, []string{"-default"}, []string{"/bin/x"}, []string{"-y"}, []string{"/bin/x", "-y"}},
		{"empty entrypoint is the image's", []string{"/app"}, nil, []string{}, []string{"-y"}, []string{"/app", "-y"}},
	} {
		got, err := heldArgv(c.imgEntry, c.imgCmd, c.entry, c.cmd)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	_, err := heldArgv(nil, nil, nil, nil)
	require.Error(t, err)
}

// heldArgv does not write into the image's entrypoint.
func TestHeldArgvCopies(t *testing.T) {
	entry := make([]string, 1, 4)
	entry[0] = "/app"
	_, err := heldArgv(entry, nil, nil, []string{"-a"})
	require.NoError(t, err)
	require.Equal(t, []string{"/app", ""}, entry[:2], "the image's entrypoint is not appended to in place")
}

// The shim is never a test binary nor a file that is not a static
// executable.
func TestFindShim(t *testing.T) {
	_, err := findShim("", nil) // this test binary
	require.ErrorContains(t, err, "test binary")
	notELF := filepath.Join(t.TempDir(), "chaoslab")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755))
	_, err = findShim(notELF, nil)
	require.ErrorContains(t, err, "check binary")
	_, err = findShim(filepath.Join(t.TempDir(), "missing"), nil)
	require.Error(t, err)
	if _, err := os.Stat("/bin/sh"); err == nil && images.CheckStatic("/bin/sh") != nil {
		_, err = findShim("/bin/sh", nil)
		require.ErrorContains(t, err, "dynamically linked")
	}
}
