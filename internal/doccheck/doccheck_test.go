// Package doccheck checks that every Go snippet in README.md, CHANGELOG.md
// and docs/ compiles, so that a reader who copies one is not the first to
// find out it does not.
//
// Approach: each ```go block must be a complete file (a package clause and
// its imports: a newcomer copies whole files). A block whose imports all
// resolve in this module is type-checked with go/types and the source
// importer, against the code as it is. A block that imports what only a
// nested module has (otel/, prometheus/, sources/etcd/, examples/stores/, quotas/redis/: their heavy
// dependencies stay out of this go.mod) cannot be type-checked here; it
// must instead stand, line for line, in a .go file of the repository (an
// Example or a program), which its own module's `go vet` and tests compile
// in CI. Type-checking in the test, rather than keeping every snippet as a
// region of a file under examples/, keeps the README's text the single
// source: no generator, nothing to keep in step by hand.
package doccheck

import (
	"bufio"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// snippet is one ```go block of a document.
type snippet struct {
	file string
	line int // of the opening fence
	src  string
}

// root is the repository's top directory.
const root = "../.."

// docs returns the documents whose snippets are checked.
func docs(t *testing.T) []string {
	t.Helper()
	out := []string{filepath.Join(root, "README.md")}
	if _, err := os.Stat(filepath.Join(root, "CHANGELOG.md")); err == nil {
		out = append(out, filepath.Join(root, "CHANGELOG.md"))
	}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, more...)
}

// snippets returns the ```go blocks of file.
func snippets(t *testing.T, file string) []snippet {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out  []snippet
		cur  *snippet
		body strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{file: file, line: n}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.src = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goSources returns the text of every .go file of the repository, nested
// modules included, for snippets that must stand in one of them.
func goSources(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, normalize(string(b)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// normalize drops blank lines and each line's indentation, so that a
// snippet matches the body of a function it was copied from.
func normalize(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestEverySnippetCompiles(t *testing.T) {
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil) // shared: each package is checked once
	var sources []string
	count := 0
	for _, doc := range docs(t) {
		for _, s := range snippets(t, doc) {
			count++
			where := filepath.Base(s.file) + ":" + itoa(s.line)
			f, err := parser.ParseFile(fset, where, s.src, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: a go block must be a complete file (package clause, imports, code): %v", where, err)
				continue
			}
			if nested(f) {
				if sources == nil {
					sources = goSources(t)
				}
				if !standsIn(normalize(s.src), sources) {
					t.Errorf("%s: this block imports a nested module's package, so it cannot be type-checked here; copy it from (or into) an Example or program of that module, line for line", where)
				}
				continue
			}
			full, err := parser.ParseFile(fset, where, s.src, 0)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			conf := types.Config{Importer: imp, Error: func(err error) { t.Errorf("%s: %v", where, err) }}
			_, _ = conf.Check(full.Name.Name, fset, []*ast.File{full}, nil)
		}
	}
	if count == 0 {
		t.Fatal("no go blocks found: the documents moved?")
	}
}

// nestedPrefixes are the import paths that only nested modules resolve.
var nestedPrefixes = []string{
	"github.com/switchboard-http/switchboard/otel",
	"github.com/switchboard-http/switchboard/prometheus",
	"github.com/chromedp/",
	"github.com/switchboard-http/switchboard/sources/",
	"github.com/switchboard-http/switchboard/examples/stores",
	"github.com/switchboard-http/switchboard/quotas/",
	"github.com/redis/go-redis/",
	"go.opentelemetry.io/",
	"go.etcd.io/",
	"github.com/knadh/koanf/providers/consul",
	"github.com/knadh/koanf/providers/s3",
	"github.com/knadh/koanf/providers/etcd",
	"github.com/knadh/koanf/providers/vault",
	"github.com/prometheus/",
}

// nested reports whether f imports a package only a nested module has.
func nested(f *ast.File) bool {
	for _, is := range f.Imports {
		path := strings.Trim(is.Path.Value, `"`)
		for _, p := range nestedPrefixes {
			if strings.HasPrefix(path, p) {
				return true
			}
		}
	}
	return false
}

// standsIn reports whether the snippet's lines, but for its package clause
// and imports, stand in one of the sources, in order.
func standsIn(snip string, sources []string) bool {
	body := snip
	if i := strings.Index(body, "\n)\n"); strings.HasPrefix(body, "package") && i >= 0 {
		body = body[i+3:] // past the import block
	}
	for _, src := range sources {
		if strings.Contains(src, body) {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// The checker must catch what it is for: a snippet that calls a function
// that does not exist fails, and one whose nested-module code stands in no
// file fails too.
func TestCheckerCatchesBrokenSnippets(t *testing.T) {
	fset := token.NewFileSet()
	src := "package main\n\nimport \"github.com/switchboard-http/switchboard/factory\"\n\nfunc main() { factory.NoSuchFunction() }\n"
	f, err := parser.ParseFile(fset, "broken.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var errs int
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) { errs++ }}
	_, _ = conf.Check("main", fset, []*ast.File{f}, nil)
	if errs == 0 {
		t.Fatal("a call of a missing function type-checked")
	}
	if standsIn(normalize("package main\n\nimport (\n\t\"x\"\n)\n\nfunc main() { neverWrittenAnywhere() }\n"), []string{normalize("func main() { other() }")}) {
		t.Fatal("standsIn found a snippet that stands nowhere")
	}
}
