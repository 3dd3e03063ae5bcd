package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCustomMiddlewareRuns(t *testing.T) {
	out := exampletest.Run(t, 30*time.Second, run)
	want := `call done: 200 OK
call done: 200 OK
server saw X-Request-Id=req-1 X-Attempt=1
server saw X-Request-Id=req-1 X-Attempt=2
server saw X-Request-Id=req-1 X-Attempt=3
server saw X-Request-Id=req-2 X-Attempt=1
server saw X-Request-Id=req-2 X-Attempt=2
server saw X-Request-Id=req-2 X-Attempt=3
`
	if out != want {
		t.Errorf("output:\ngot:\n%s\nwant:\n%s", out, want)
	}
}
