package middleware

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// replayKind says how the retry layer gives each attempt its request body.
type replayKind uint8

const (
	replayNone     replayKind = iota // no body: every attempt sends none
	replayGetBody                    // attempt 1 sends req.Body, later ones req.GetBody()
	replayBuffered                   // the body was read into buf; every attempt reads buf
	replayOnce                       // not replayable: sent once, never retried
)

// replay is the body plan of one logical call. It lives on the retry
// layer's stack frame; only the buffered case allocates (the buffer).
type replay struct {
	kind replayKind
	buf  *bufSource    // replayBuffered: the whole body
	once io.ReadCloser // replayOnce: the body to send, maybe a buffered prefix + the rest
}

// replayable reports whether the body can be sent again.
func (r *replay) replayable() bool { return r.kind != replayOnce }

// prepare decides how the body of req is replayed. wantRetry is false when
// no retry can happen whatever the outcome (the method is not eligible),
// in which case the body is never buffered. limit is
// RetrySettings.MaxBufferedBody. On error, req.Body has been closed.
func (r *replay) prepare(req *http.Request, wantRetry bool, limit int64) error {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		r.kind = replayNone
	case req.GetBody != nil:
		r.kind = replayGetBody
	case !wantRetry || limit <= 0 || req.ContentLength > limit:
		r.kind, r.once = replayOnce, req.Body
	default:
		buf, complete, err := readPrefix(req.Body, limit, req.ContentLength)
		if err != nil {
			req.Body.Close()
			return fmt.Errorf("switchboard: read request body to buffer it for retries: %w", err)
		}
		if complete {
			req.Body.Close()
			r.kind, r.buf = replayBuffered, &bufSource{buf: buf}
		} else {
			// Longer than the limit: send the prefix already read followed by
			// the rest, once. Closing it closes the caller's body.
			r.kind = replayOnce
			r.once = &prefixBody{Reader: io.MultiReader(bytes.NewReader(buf), req.Body), rc: req.Body}
		}
	}
	return nil
}

// errReplayBody is wrapped by the error of a request body that could not be
// produced again for a later attempt or a hedged copy: that copy was never
// sent, and Classify calls it a local rejection.
var errReplayBody = errors.New("switchboard: replay request body")

// body returns the body for attempt n (1-based) and the ContentLength that
// goes with it. For replayGetBody it calls req.GetBody from attempt 2 on;
// a GetBody error (or a nil body) is returned wrapped, with errReplayBody.
func (r *replay) body(req *http.Request, n int) (io.ReadCloser, int64, error) {
	switch r.kind {
	case replayGetBody:
		if n == 1 {
			return req.Body, req.ContentLength, nil
		}
		b, err := req.GetBody()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errReplayBody, err)
		}
		if b == nil {
			return nil, 0, fmt.Errorf("%w: GetBody returned nil", errReplayBody)
		}
		return b, req.ContentLength, nil
	case replayBuffered:
		b, _ := r.buf.getBody()
		return b, int64(len(r.buf.buf)), nil
	case replayOnce:
		return r.once, req.ContentLength, nil
	default:
		return req.Body, req.ContentLength, nil
	}
}

// sameBody reports whether attempt n (1-based) sends req's own Body and
// ContentLength, so that its request needs no copy for the body's sake.
func (r *replay) sameBody(n int) bool {
	switch r.kind {
	case replayNone:
		return true
	case replayGetBody:
		return n == 1
	case replayOnce:
		_, prefixed := r.once.(*prefixBody)
		return !prefixed
	default: // replayBuffered: every attempt reads the buffer
		return false
	}
}

// bufSource holds a buffered request body. Its getBody is set as the GetBody
// of each attempt's clone, so that the transport can resend the body itself
// (after a reused connection broke). It lives on the heap so that taking the
// method value does not move the retry layer's frame there too.
type bufSource struct{ buf []byte }

func (s *bufSource) getBody() (io.ReadCloser, error) {
	if len(s.buf) == 0 {
		return http.NoBody, nil
	}
	b := new(bufBody)
	b.Reset(s.buf)
	return b, nil
}

// readPrefix reads up to limit+1 bytes of body, to learn whether it holds at
// most limit bytes (complete). hint is the request's ContentLength, used to
// size the buffer when it is known.
func readPrefix(body io.Reader, limit, hint int64) (buf []byte, complete bool, err error) {
	size := int64(512)
	if hint > 0 {
		size = hint + 1 // room to see EOF without growing
	}
	buf = make([]byte, 0, min(size, limit+1))
	for {
		if int64(len(buf)) > limit {
			return buf, false, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append grow it
		}
		room := min(int64(cap(buf)), limit+1)
		n, rerr := body.Read(buf[len(buf):room])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			return buf, int64(len(buf)) <= limit, nil
		}
		if rerr != nil {
			return nil, false, rerr
		}
	}
}

// bufBody replays a buffered body; Close is a no-op. Embedding the reader by
// value makes it one allocation per attempt instead of two for
// io.NopCloser(bytes.NewReader(buf)).
type bufBody struct{ bytes.Reader }

func (*bufBody) Close() error { return nil }

// prefixBody is a body too long to buffer: the prefix read so far, then the
// rest. Close closes the caller's body.
type prefixBody struct {
	io.Reader
	rc io.Closer
}

func (b *prefixBody) Close() error { return b.rc.Close() }
