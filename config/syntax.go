package config

import (
	"errors"
	"fmt"
	"strings"

	yaml4 "go.yaml.in/yaml/v4"
)

// syntaxError returns the first YAML syntax error of the file name's bytes
// b, or nil, as "config file NAME:LINE:COLUMN: what", at the offending
// character: a tab that indents, a line indented off its block, a flow
// collection never closed ({a: b with no }, which also says where it
// opened), a key given twice in one map.
//
// go.yaml.in/yaml/v3, which koanf's parser uses, reports a syntax error on
// the line of the construct that contains it (a tab on line 3 as line 2)
// and has no column; v4 of the same library keeps both marks on its
// *LoadError, so the file is checked with v4 first. Decoding into an
// `any` also rejects duplicate keys, which a yaml.Node keeps silently.
func syntaxError(name string, b []byte) error {
	var v any
	err := yaml4.Unmarshal(b, &v)
	if err == nil {
		return nil
	}
	var le *yaml4.LoadError
	var les *yaml4.LoadErrors
	switch {
	case errors.As(err, &le):
	case errors.As(err, &les) && len(les.Errors) > 0:
		le = les.Errors[0]
	default:
		return fmt.Errorf("config file %s: %w", name, err)
	}
	msg := le.Message
	if at := le.Mark; at.Line > 0 && charAt(b, at.Line, at.Column) == '\t' {
		msg += " (a tab: YAML indents with spaces only)"
	} else if strings.HasPrefix(le.ContextMsg, "while parsing a flow") && le.ContextMark.Line > 0 && le.ContextMark != le.Mark {
		msg += fmt.Sprintf(" (%s opened at %d:%d)", strings.TrimPrefix(le.ContextMsg, "while parsing a "), le.ContextMark.Line, le.ContextMark.Column)
	} else if le.ContextMsg == "while parsing a block mapping" && le.ContextMark.Line > 0 {
		msg += fmt.Sprintf(" (a line indented off its block: the map at %d:%d)", le.ContextMark.Line, le.ContextMark.Column)
	}
	if le.Mark.Line == 0 {
		return fmt.Errorf("config file %s: %w: %s", name, ErrSyntax, msg)
	}
	return fmt.Errorf("config file %s:%d:%d: %w: %s", name, le.Mark.Line, le.Mark.Column, ErrSyntax, msg)
}

// ErrSyntax is matched (errors.Is) by the error Load returns when the file
// is not valid YAML; the message gives file:line:column of the offending
// character.
var ErrSyntax = errors.New("not valid YAML")

// charAt returns the byte at the 1-based line and column of b (columns
// count characters; the lines that matter here start with ASCII), or 0.
func charAt(b []byte, line, col int) byte {
	lines := strings.SplitN(string(b), "\n", line+1)
	if line > len(lines) {
		return 0
	}
	l := []rune(lines[line-1])
	if col < 1 || col > len(l) || l[col-1] > 0x7f {
		return 0
	}
	return byte(l[col-1])
}
