package main

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

// TestMain runs the tests or, when run re-executes this binary as a
// member of the fleet, that member.
func TestMain(m *testing.M) {
	if os.Getenv(memberEnv) != "" {
		if err := member(os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestThreeProcessesShareOneQuota: three OS processes, one quota of 50/s
// burst 5 on a real redis-server, each trying 200/s for 5s: the backend
// admits 250 ± 10%.
func TestThreeProcessesShareOneQuota(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := exampletest.Run(t, time.Minute, func(w io.Writer) error { return run(w, self, "") })
	t.Log(out)
	m := regexp.MustCompile(`the backend admitted (\d+) in 5s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no admitted count in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 225 || n > 275 {
		t.Errorf("the backend admitted %d, want 250 ± 10%%", n)
	}
}
