package ebscontrol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// RemirrorRequest asks for a slot for a new mirror of a volume.
type RemirrorRequest struct {
	Zone    string   `json:"zone"`
	Volume  string   `json:"volume"`
	Node    string   `json:"node"`
	Exclude []string `json:"exclude,omitempty"`
}

// RemirrorReply names the node whose slot was claimed.
type RemirrorReply struct {
	Mirror string `json:"mirror"`
}

// ElectRequest confirms primary as the volume's primary with a new mirror.
type ElectRequest struct {
	Zone    string `json:"zone"`
	Volume  string `json:"volume"`
	Primary string `json:"primary"`
	Mirror  string `json:"mirror"`
}

// ReleaseRequest gives back a slot a failed re-mirror claimed.
type ReleaseRequest struct {
	Zone string `json:"zone"`
	Node string `json:"node"`
}

// CreateRequest is create-volume in a zone.
type CreateRequest struct {
	Zone string `json:"zone"`
}

// Status is the control plane's figures (GET /v1/status).
type Status struct {
	Pools map[string]PoolStatus `json:"pools"`
	Zones map[string]ZoneStatus `json:"zones"`
}

// PoolStatus is one worker pool's use.
type PoolStatus struct {
	Workers int `json:"workers"`
	Busy    int `json:"busy"`
	Waiting int `json:"waiting"`
}

// ZoneStatus counts a zone's calls since the start.
type ZoneStatus struct {
	Requests      int64 `json:"requests"`
	OK            int64 `json:"ok"`
	Timeouts      int64 `json:"timeouts"`
	QueueTimeouts int64 `json:"queue_timeouts"`
	NoSpace       int64 `json:"no_space"`
	// Creates are the create-volume calls answered (or given up by their
	// caller); CreatesFast those answered OK within the SLO;
	// CreatesAbandoned those whose caller hung up before the answer.
	Creates          int64 `json:"creates"`
	CreatesFast      int64 `json:"creates_fast"`
	CreatesAbandoned int64 `json:"creates_abandoned"`
}

// Client calls the API.
type Client struct {
	Base string
	HTTP *http.Client
}

// Call sends in as JSON and decodes the answer into out (nil: ignored).
func (c Client) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("call %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(b))}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// StatusError is an answer other than 200.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Code, e.Msg) }
