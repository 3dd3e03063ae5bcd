package middleware

import (
	"io"
	"net/http"
	"sync/atomic"
)

// OnBodyEnd returns body wrapped so that end runs exactly once, when the
// body is closed or a read returns an error (io.EOF included), whichever
// comes first; a Close racing a Read, which net/http allows, runs it once
// too. It is how a layer holds something for as long as its caller reads
// the response: the bulkhead its slot, the factory's transports their
// count of requests in flight. A body that is also an io.Writer (the
// connection of a 101 Switching Protocols response, which callers find by
// type assertion) stays one. The wrapper is one allocation; pass an end
// made once (a method value kept in a field), not one per call, to keep it
// so. A nil body or a nil end returns body as is. The wrapper is as safe
// for concurrent use as body is.
func OnBodyEnd(body io.ReadCloser, end func()) io.ReadCloser {
	if body == nil || end == nil {
		return body
	}
	if rwc, ok := body.(io.ReadWriteCloser); ok {
		return &endRWBody{endBody{rc: rwc, end: end}, rwc}
	}
	return &endBody{rc: body, end: end}
}

// endAfterBody makes end run when the caller is done with resp's body: at
// once when there is nothing to read (a nil body or http.NoBody, which is
// then handed on as is, so that the layers above see it too and free what
// they hold at once), else through OnBodyEnd. It is how the bulkhead and
// the hedging layer hold a slot or a context for as long as the body is
// read.
func endAfterBody(resp *http.Response, end func()) {
	if resp.Body == nil || resp.Body == http.NoBody {
		end()
		return
	}
	resp.Body = OnBodyEnd(resp.Body, end)
}

// endBody is the wrapper of OnBodyEnd. A layer that must keep per-call
// state until the body ends may embed it and set ender instead of end, so
// that the wrapper, its state and the end are one allocation (the
// adaptive bulkhead's adaptiveCall).
type endBody struct {
	rc    io.ReadCloser
	end   func()
	ender interface{ bodyEnded() } // used when end is nil
	done  atomic.Bool
}

func (x *endBody) Read(p []byte) (int, error) {
	n, err := x.rc.Read(p)
	if err != nil {
		x.finish()
	}
	return n, err
}

func (x *endBody) Close() error {
	err := x.rc.Close()
	x.finish()
	return err
}

func (x *endBody) finish() {
	if x.done.CompareAndSwap(false, true) {
		if x.end != nil {
			x.end()
		} else {
			x.ender.bodyEnded()
		}
	}
}

// endRWBody is an endBody that keeps the io.Writer of a writable body.
type endRWBody struct {
	endBody
	w io.Writer
}

func (x *endRWBody) Write(p []byte) (int, error) { return x.w.Write(p) }
