package middleware_test

import (
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

// rwBody is a readable, writable body, as a 101 response's connection is.
type rwBody struct {
	io.Reader
	wrote strings.Builder
}

func (b *rwBody) Write(p []byte) (int, error) { return b.wrote.Write(p) }
func (*rwBody) Close() error                  { return nil }

func TestOnBodyEnd(t *testing.T) {
	t.Run("read to EOF, then closed: once", func(t *testing.T) {
		var n atomic.Int32
		b := middleware.OnBodyEnd(io.NopCloser(strings.NewReader("ok")), func() { n.Add(1) })
		if got, err := io.ReadAll(b); err != nil || string(got) != "ok" {
			t.Fatalf("read %q, %v", got, err)
		}
		if n.Load() != 1 {
			t.Fatalf("after EOF: end ran %d times, want 1", n.Load())
		}
		b.Close()
		if n.Load() != 1 {
			t.Errorf("after Close: end ran %d times, want 1", n.Load())
		}
	})
	t.Run("closed unread: once", func(t *testing.T) {
		var n atomic.Int32
		b := middleware.OnBodyEnd(io.NopCloser(strings.NewReader("ok")), func() { n.Add(1) })
		b.Close()
		b.Close()
		if n.Load() != 1 {
			t.Errorf("end ran %d times, want 1", n.Load())
		}
	})
	t.Run("Close racing Read: once", func(t *testing.T) {
		for range 100 {
			var n atomic.Int32
			b := middleware.OnBodyEnd(io.NopCloser(strings.NewReader("")), func() { n.Add(1) })
			var wg sync.WaitGroup
			wg.Go(func() { _, _ = b.Read(make([]byte, 1)) })
			wg.Go(func() { b.Close() })
			wg.Wait()
			if n.Load() != 1 {
				t.Fatalf("end ran %d times, want 1", n.Load())
			}
		}
	})
	t.Run("a writable body stays one", func(t *testing.T) {
		rw := &rwBody{Reader: strings.NewReader("")}
		w, ok := middleware.OnBodyEnd(rw, func() {}).(io.Writer)
		if !ok {
			t.Fatal("wrapper of a writable body is not an io.Writer")
		}
		if _, err := io.WriteString(w, "ping"); err != nil || rw.wrote.String() != "ping" {
			t.Errorf("write went %q, %v; want ping to the body", rw.wrote.String(), err)
		}
	})
	t.Run("nil end: the body itself", func(t *testing.T) {
		body := io.NopCloser(strings.NewReader(""))
		if got := middleware.OnBodyEnd(body, nil); got != body {
			t.Error("wrapped although there is nothing to run")
		}
	})
}
