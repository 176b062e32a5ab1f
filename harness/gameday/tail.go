package gameday

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// tickEvery is how often Tail looks for new journal lines.
const tickEvery = 100 * time.Millisecond

// Tail feeds the hub with the journal at path, from its start and then as
// it grows, until ctx ends or the journal's end record is read. A journal
// not there yet is waited for.
func Tail(ctx context.Context, path string, h *Hub) error {
	var f *os.File
	for f == nil {
		var err error
		if f, err = os.Open(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f == nil && !lab.Sleep(ctx, tickEvery) {
			return ctx.Err()
		}
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<20)
	var part []byte
	for {
		line, err := rd.ReadBytes('\n')
		part = append(part, line...)
		if err == nil {
			var r journal.Record
			if json.Unmarshal(part, &r) == nil {
				h.Apply(r)
				if r.Kind == journal.KindEnd {
					return nil
				}
			}
			part = part[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		if !lab.Sleep(ctx, tickEvery) {
			return ctx.Err()
		}
	}
}
