package wants_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/wants"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLinesStopsAtTheFirstOtherLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	content := "# want: first\n# want: second\nclients: {}\n# want: not this one\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := wants.Lines(t, path), []string{"first", "second"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
