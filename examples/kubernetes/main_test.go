package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKubernetesRuns(t *testing.T) {
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(&out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run: did not finish within 60s")
	}
	for _, want := range []string{
		"GET /v1/invoices/42: 503 Service Unavailable after 3 attempts",
		"GET /v1/invoices/42: 200 OK after 4 attempts",
		"mounted: ..2026_11_29_10_00_00.123, ..data -> ..2026_11_29_10_00_00.123, clients.yaml -> ..data/clients.yaml",
		"status: generation 1, client billing: timeout 3s (env), retry.max_retries 2",
		"swapped ..data -> ..2026_11_29_10_05_00.456",
		"reloaded: generation 2, changed [billing]",
		"status: generation 2, client billing: timeout 3s (env), retry.max_retries 4",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
