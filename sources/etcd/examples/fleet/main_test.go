package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The fleet test runs etcd in this process; every test stops it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// buildFleet builds this program into t.TempDir() and returns its path.
func buildFleet(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fleet")
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestDemoRuns(t *testing.T) {
	bin := buildFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("fleet: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"put /switchboard/clients.yaml: billing retry.max_retries 2",
		"a: started, generation 1: billing max_retries 2 (source etcd:/switchboard/clients.yaml), timeout 5s (file a.yaml:3), rate limit 10/s (env SWITCHBOARD_CLIENTS__BILLING__RATE_LIMIT__REQUESTS_PER_SECOND)",
		"c: started, generation 1: billing max_retries 2 (source etcd:/switchboard/clients.yaml)",
		"a: applied generation 2, max_retries 5, ",
		"b: applied generation 2, max_retries 5, ",
		"c: applied generation 2, max_retries 5, ",
		"b: rejected it, keeps max_retries 5: ",
		"source etcd:/switchboard/clients.yaml: clients.billing.retry.max_retries: must be >= 0, got -1",
		"etcd: stopped",
		"a: applied generation 3: timeout 7s, max_retries 5 (etcd's last good snapshot)",
		"a: status: source etcd:/switchboard/clients.yaml stale: true (etcd key /switchboard/clients.yaml: no answer within 500ms",
		"b: still serving: GET through billing: 200 OK",
		"c: still serving: GET through billing: 200 OK",
		"etcd: restarted on the same port and data",
		"a: applied generation 4, max_retries 6, ",
		"c: applied generation 3, max_retries 6, ",
		"done: three processes stopped, etcd stopped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
