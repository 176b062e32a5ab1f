package zookeeper

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLogCounter(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "zk1.log"), filepath.Join(dir, "zk2.log")
	before := "x LEADING - LEADER ELECTION TOOK - 10 MS\n"
	require.NoError(t, os.WriteFile(a, []byte(before), 0o644))
	c := newLogCounter([]string{a, b}) // zk2's log does not exist yet
	s := c.sample(1)
	require.Equal(t, logSource, s.Member)
	require.True(t, s.OK)
	require.Equal(t, 0.0, s.Values[SeriesElections], "what was there before the start does not count")

	appendTo := func(path, text string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	appendTo(a, "WARN Leader - Not sufficient followers synced, only synced with sids: [ 1 ]\nINFO LEADING - LEADER ELECTION TOOK - 20 MS\nWARN Not sufficient fol")
	appendTo(b, "INFO LEADING - LEADER ELECTION TOOK - 30 MS\n")
	c.last = time.Time{}
	s = c.sample(2)
	require.Equal(t, 1.0, s.Values[SeriesNotSynced], "a line not yet ended waits")
	require.Equal(t, 2.0, s.Values[SeriesElections])

	appendTo(a, "lowers synced, only synced with sids: [ 2 ]\n")
	s = c.sample(3)
	require.Equal(t, 1.0, s.Values[SeriesNotSynced], "read at most every second")
	c.last = time.Time{}
	s = c.sample(4)
	require.Equal(t, 2.0, s.Values[SeriesNotSynced], "a line split across reads counts once it ends")
	require.Equal(t, 2.0, s.Values[SeriesElections])
}
