package middleware

import (
	"io"
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

// endBody is the wrapper of OnBodyEnd.
type endBody struct {
	rc   io.ReadCloser
	end  func()
	done atomic.Bool
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
		x.end()
	}
}

// endRWBody is an endBody that keeps the io.Writer of a writable body.
type endRWBody struct {
	endBody
	w io.Writer
}

func (x *endRWBody) Write(p []byte) (int, error) { return x.w.Write(p) }
