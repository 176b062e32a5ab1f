package ebsnode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// The mirror protocol: a frame is kind (1 byte: 'W' a write, 'F' a full
// copy), the volume id's length (1 byte) and id, offset and length (4
// bytes each, big endian), then the bytes; the mirror answers each frame
// with one byte, 'A', once the bytes are in its replica file.
const (
	frameWrite = 'W'
	frameFull  = 'F'
	ack        = 'A'
)

// sendFrame writes one frame.
func sendFrame(w io.Writer, kind byte, vol string, off int64, data []byte) error {
	if len(vol) > 255 {
		return fmt.Errorf("send frame: volume id %q too long", vol)
	}
	h := make([]byte, 0, 10+len(vol))
	h = append(h, kind, byte(len(vol)))
	h = append(h, vol...)
	h = binary.BigEndian.AppendUint32(h, uint32(off))
	h = binary.BigEndian.AppendUint32(h, uint32(len(data)))
	if _, err := w.Write(append(h, data...)); err != nil {
		return fmt.Errorf("send frame: %w", err)
	}
	return nil
}

// replicas are the volumes a node mirrors, each a file in its folder.
type replicas struct {
	dir   string
	mu    sync.Mutex
	files map[string]*os.File
	held  atomic.Int64
}

func (r *replicas) file(vol string) (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.files[vol]; ok {
		return f, nil
	}
	f, err := os.OpenFile(filepath.Join(r.dir, "replica-"+vol+".img"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open replica: %w", err)
	}
	r.files[vol] = f
	r.held.Store(int64(len(r.files)))
	return f, nil
}

// serve reads frames from one primary until it hangs up.
func (r *replicas) serve(c net.Conn, maxBytes int) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		vol, off, data, err := readFrame(br, maxBytes)
		if err != nil {
			return
		}
		f, err := r.file(vol)
		if err != nil {
			return
		}
		if _, err := f.WriteAt(data, off); err != nil {
			return
		}
		if _, err := c.Write([]byte{ack}); err != nil {
			return
		}
	}
}

func readFrame(br *bufio.Reader, maxBytes int) (vol string, off int64, data []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return "", 0, nil, err
	}
	if h[0] != frameWrite && h[0] != frameFull {
		return "", 0, nil, errors.New("read frame: unknown kind")
	}
	id := make([]byte, int(h[1])+8)
	if _, err = io.ReadFull(br, id); err != nil {
		return "", 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(id[len(id)-4:]))
	if n > maxBytes {
		return "", 0, nil, fmt.Errorf("read frame: %d bytes is more than a volume", n)
	}
	data = make([]byte, n)
	if _, err = io.ReadFull(br, data); err != nil {
		return "", 0, nil, err
	}
	return string(id[:h[1]]), int64(binary.BigEndian.Uint32(id[len(id)-8:])), data, nil
}

func (r *replicas) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.files {
		f.Close()
	}
}
