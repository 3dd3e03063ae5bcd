package scenario_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// call, server and stack of a scenario has ended when its Run returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
