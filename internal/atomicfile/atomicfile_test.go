package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWriteReplacesByRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	atomicfile.Write(t, path, "new")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("got %q, %v; want new", b, err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("the file was written in place, not replaced by a rename")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the file alone (no temporary left)", len(entries))
	}
}
