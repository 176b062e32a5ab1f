package ebsnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// errStuck is a write to a volume without a live mirror.
var errStuck = errors.New("volume stuck: no live mirror")

// volume is one volume the node is primary for.
type volume struct {
	n    *node
	id   string
	file *os.File
	r    *rand.Rand

	mu     sync.Mutex
	mirror string
	conn   net.Conn
	br     *bufio.Reader
	live   bool
	lost   chan struct{}
}

func (n *node) newVolume(vc VolumeConfig, seed uint64) (*volume, error) {
	f, err := os.OpenFile(filepath.Join(n.cfg.Dir, "volume-"+vc.ID+".img"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open volume: %w", err)
	}
	v := &volume{n: n, id: vc.ID, file: f, r: rng(seed), mirror: vc.Mirror}
	data := make([]byte, n.cfg.VolumeKiB*1024)
	for i := range data {
		data[i] = byte(v.r.IntN(256))
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return nil, fmt.Errorf("write volume: %w", err)
	}
	return v, nil
}

func (v *volume) isLive() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.live
}

// run connects the first mirror (waiting for it to start), then writes
// until the mirror is lost and searches for a new one, over and over.
func (v *volume) run(ctx context.Context) {
	defer v.file.Close()
	for !v.connect(ctx, v.mirror) {
		if !lab.Sleep(ctx, 200*time.Millisecond) {
			return
		}
	}
	for ctx.Err() == nil {
		v.serve(ctx)
		v.search(ctx)
	}
	v.drop()
}

// connect opens a connection to mirror through its proxy and copies the
// whole volume there; on success the volume is live with that mirror.
func (v *volume) connect(ctx context.Context, mirror string) bool {
	addr, ok := v.n.cfg.Peers[mirror]
	if !ok {
		return false
	}
	d := net.Dialer{Timeout: v.n.cfg.MirrorTimeout.D()}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	data := make([]byte, v.n.cfg.VolumeKiB*1024)
	if _, err := v.file.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		c.Close()
		return false
	}
	br := bufio.NewReader(c)
	if err := exchange(c, br, frameFull, v.id, 0, data, CopyFactor*v.n.cfg.MirrorTimeout.D()); err != nil {
		c.Close()
		return false
	}
	v.mu.Lock()
	v.mirror, v.conn, v.br, v.live, v.lost = mirror, c, br, true, make(chan struct{})
	v.mu.Unlock()
	return true
}

// exchange sends one frame and waits for its ack within d.
func exchange(c net.Conn, br *bufio.Reader, kind byte, vol string, off int64, data []byte, d time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(d))
	if err := sendFrame(c, kind, vol, off, data); err != nil {
		return err
	}
	b, err := br.ReadByte()
	if err != nil {
		return fmt.Errorf("read ack: %w", err)
	}
	if b != ack {
		return fmt.Errorf("read ack: got %q", b)
	}
	return nil
}

// serve writes a block every write_every until the mirror is lost.
func (v *volume) serve(ctx context.Context) {
	v.mu.Lock()
	lost := v.lost
	v.mu.Unlock()
	t := time.NewTicker(v.n.cfg.WriteEvery.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
			return
		case <-t.C:
		}
		size := v.n.cfg.WriteBytes
		off := int64(v.r.IntN(v.n.cfg.VolumeKiB*1024-size+1)) / int64(size) * int64(size)
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(v.r.IntN(256))
		}
		_ = v.write(off, buf)
	}
}

// write applies a block locally and on the mirror; a missing ack loses
// the mirror and the volume is stuck until a new one is elected.
func (v *volume) write(off int64, data []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.live {
		v.n.blocked.Add(1)
		return errStuck
	}
	if _, err := v.file.WriteAt(data, off); err != nil {
		return fmt.Errorf("write volume: %w", err)
	}
	if err := exchange(v.conn, v.br, frameWrite, v.id, off, data, v.n.cfg.MirrorTimeout.D()); err != nil {
		v.loseLocked()
		v.n.log.Info("mirror lost", "volume", v.id, "mirror", v.mirror, "err", err)
		return errStuck
	}
	v.n.writes.Add(1)
	return nil
}

func (v *volume) loseLocked() {
	if !v.live {
		return
	}
	v.live = false
	v.conn.Close()
	close(v.lost)
}

func (v *volume) drop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.loseLocked()
}

// search asks the control plane for a slot, copies the volume there and
// has the node confirmed as primary with the new mirror; every failure
// waits the back-off and asks again. The lost mirror is taken for failed
// and never asked for again.
func (v *volume) search(ctx context.Context) {
	v.mu.Lock()
	old := v.mirror
	v.mu.Unlock()
	n := v.n
	for attempt := 1; ctx.Err() == nil; attempt++ {
		n.searches.Add(1)
		var rep ebscontrol.RemirrorReply
		err := n.call(ctx, "/v1/remirror", ebscontrol.RemirrorRequest{Zone: n.cfg.Zone, Volume: v.id, Node: n.cfg.ID, Exclude: []string{old}}, &rep)
		if err == nil {
			if v.connect(ctx, rep.Mirror) {
				err = n.call(ctx, "/v1/elect", ebscontrol.ElectRequest{Zone: n.cfg.Zone, Volume: v.id, Primary: n.cfg.ID, Mirror: rep.Mirror}, nil)
				if err == nil {
					n.remirrors.Add(1)
					n.log.Info("re-mirrored", "volume", v.id, "mirror", rep.Mirror, "attempts", attempt)
					return
				}
				v.drop()
			} else {
				n.copyFails.Add(1)
				err = errors.New("copy to the new mirror failed")
			}
			_ = n.call(context.WithoutCancel(ctx), "/v1/release", ebscontrol.ReleaseRequest{Zone: n.cfg.Zone, Node: rep.Mirror}, nil)
		}
		n.searchFails.Add(1)
		if !lab.Sleep(ctx, n.cfg.Delay(attempt, v.r)) {
			return
		}
	}
}

// call is one control-plane call within the node's own timeout.
func (n *node) call(ctx context.Context, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ControlTimeout)
	defer cancel()
	return n.ctl.Call(ctx, http.MethodPost, path, in, out)
}
