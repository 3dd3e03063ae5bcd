package reload_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every Watcher must
// stop all of its goroutines on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
