package dblb

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"
)

func pgMsg(typ byte, fields ...string) []byte {
	var body []byte
	for _, f := range fields {
		body = append(append(body, f...), 0)
	}
	out := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(4+len(body)))
	return append(out, body...)
}

func pgStartup(code uint32, rest []byte) []byte {
	out := make([]byte, 8)
	binary.BigEndian.PutUint32(out, uint32(8+len(rest)))
	binary.BigEndian.PutUint32(out[4:], code)
	return append(out, rest...)
}

// The proxy passes every byte on and counts what runs: an Execute of a
// parsed SELECT is a read, a simple UPDATE a write; Parse, Bind and
// BEGIN run nothing.
func TestPGProxyCountsStatements(t *testing.T) {
	var in bytes.Buffer
	in.Write(pgStartup(80877103, nil)) // SSLRequest (answered 'N')
	in.Write(pgStartup(196608, []byte("user\x00pod1\x00\x00")))
	in.Write(pgMsg('P', "s1", "SELECT count(*) FROM items WHERE id BETWEEN $1 AND $2", "\x00\x00"))
	in.Write(pgMsg('B', "", "s1", "\x00\x00"))
	in.Write(pgMsg('E', "", "\x00\x00\x00"))
	in.Write(pgMsg('S'))
	in.Write(pgMsg('E', "", "\x00\x00\x00")) // the same portal again
	in.Write(pgMsg('Q', "  update items set v = v + 1 where id = 3"))
	in.Write(pgMsg('Q', "BEGIN"))
	sent := bytes.Clone(in.Bytes())
	var up bytes.Buffer
	var reads, writes int
	err := frontend(&in, &up, func(_ time.Time, write bool) {
		if write {
			writes++
		} else {
			reads++
		}
	})
	if err != io.EOF {
		t.Fatalf("frontend: %v", err)
	}
	if !bytes.Equal(up.Bytes(), sent) {
		t.Fatal("the bytes passed on differ from the bytes sent")
	}
	if reads != 2 || writes != 1 {
		t.Fatalf("reads %d, writes %d, want 2 and 1", reads, writes)
	}
}
