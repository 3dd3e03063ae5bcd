// Package atomicfile saves files in tests the way careful editors and Go's
// atomic writers do (vim, VS Code, renameio): the new content goes to a
// temporary file in the same directory, which is then renamed over the
// target, so a reader sees the old file or the new one, never a part. It
// exists so that the watcher's and the registry's tests save files alike.
package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces path's content with content by a rename; any error fails
// t. It is safe for concurrent use on different paths.
func Write(t *testing.T, path, content string) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".edit-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}
