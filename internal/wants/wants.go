// Package wants reads the expectations written into the project's invalid
// testdata files: each starts with one or more "# want: <text>" lines, the
// substrings of the error that loading it must produce. The config tests and
// the CLI's tests read them the same way through this package.
package wants

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// Lines returns the substrings of path's leading "# want:" lines and fails
// t when the file cannot be read or has none. It is safe for concurrent use.
func Lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		w, ok := strings.CutPrefix(sc.Text(), "# want: ")
		if !ok {
			break
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		t.Fatalf("%s: got no leading # want: line, want one or more", path)
	}
	return out
}
