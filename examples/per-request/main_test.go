package main

import (
	"bytes"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPerRequestRuns(t *testing.T) {
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
	want := `GET  /invoices/42   -> 200 OK "GET /invoices/42 done"
POST /payments      -> 503 Service Unavailable "busy"
POST /refunds       -> 200 OK "POST /refunds done"
server: GET /invoices/42 2 attempt(s)
server: POST /payments   1 attempt(s)
server: POST /refunds    2 attempt(s)
`
	if out.String() != want {
		t.Errorf("output:\ngot:\n%s\nwant:\n%s", out.String(), want)
	}
}
