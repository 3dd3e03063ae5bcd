package main

import (
	"bytes"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCustomMiddlewareRuns(t *testing.T) {
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(&out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run: did not finish within 30s")
	}
	want := `call done: 200 OK
call done: 200 OK
server saw X-Request-Id=req-1 X-Attempt=1
server saw X-Request-Id=req-1 X-Attempt=2
server saw X-Request-Id=req-1 X-Attempt=3
server saw X-Request-Id=req-2 X-Attempt=1
server saw X-Request-Id=req-2 X-Attempt=2
server saw X-Request-Id=req-2 X-Attempt=3
`
	if out.String() != want {
		t.Errorf("output:\ngot:\n%s\nwant:\n%s", out.String(), want)
	}
}
