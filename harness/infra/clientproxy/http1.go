package clientproxy

import (
	"bufio"
	"io"
	"net/http"
)

// newHTTP1 reads requests and responses as they pass, each direction in a
// goroutine of its own behind a pipe: a request is counted when its head
// has passed, and answered when its response has passed whole (a 1xx
// response is not the answer).
func newHTTP1(k *conn) (up, down io.WriteCloser) {
	methods := make(chan string, 1024)
	upR, upW := io.Pipe()
	downR, downW := io.Pipe()
	go func() {
		defer close(methods)
		br := bufio.NewReader(upR)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				upR.CloseWithError(err)
				return
			}
			k.opened()
			select {
			case methods <- req.Method:
			default: // a client this far ahead is not counted further
				upR.CloseWithError(io.ErrShortBuffer)
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				upR.CloseWithError(err)
				return
			}
		}
	}()
	go func() {
		br := bufio.NewReader(downR)
		for m := range methods {
			for {
				resp, err := http.ReadResponse(br, &http.Request{Method: m})
				if err != nil {
					downR.CloseWithError(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				if err != nil {
					downR.CloseWithError(err)
					return
				}
				if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
					break
				}
			}
			k.answered()
		}
		downR.CloseWithError(io.EOF)
	}()
	return upW, downW
}
