package logcapture_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/logcapture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecordsFiltersByMessage(t *testing.T) {
	log, c := logcapture.New()
	log.Debug("one", "event", "a")
	log.Warn("two", "event", "b")
	log.Debug("one", "event", "c")
	if got := len(c.Records(t, "")); got != 3 {
		t.Fatalf("all records: got %d, want 3", got)
	}
	ones := c.Records(t, "one")
	if len(ones) != 2 || ones[0]["event"] != "a" || ones[1]["event"] != "c" {
		t.Fatalf("records of \"one\": got %v, want events a and c", ones)
	}
}
