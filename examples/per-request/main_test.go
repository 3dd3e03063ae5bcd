package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPerRequestRuns(t *testing.T) {
	out := exampletest.Run(t, 30*time.Second, run)
	want := `GET  /invoices/42   -> 200 OK "GET /invoices/42 done"
POST /payments      -> 503 Service Unavailable "busy"
POST /refunds       -> 200 OK "POST /refunds done"
server: GET /invoices/42 2 attempt(s)
server: POST /payments   1 attempt(s)
server: POST /refunds    2 attempt(s)
`
	if out != want {
		t.Errorf("output:\ngot:\n%s\nwant:\n%s", out, want)
	}
}
