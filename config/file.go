package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	koanfyaml "github.com/knadh/koanf/parsers/yaml"
	"go.yaml.in/yaml/v3"
)

// fileLayer parses the YAML file's bytes and checks every key against the
// schema. It returns the file's canonical tree (bad keys and values left
// out, each reported in st.errs with its line) and the client names the file
// defines. The error is a file-level one: empty file or malformed YAML.
func (st *loadState) fileLayer(name string, b []byte) (map[string]any, []string, error) {
	if err := syntaxError(name, b); err != nil {
		return nil, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", name, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind == 0 || root.Kind == yaml.DocumentNode ||
		(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		return nil, nil, fmt.Errorf("config file %s: %w", name, ErrEmptyFile)
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("config file %s: line %d: the top level must be a map with the sections defaults and clients", name, root.Line)
	}
	mp, err := koanfyaml.Parser().Unmarshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", name, err)
	}
	if st.section != "" {
		if root, err = sectionNode(root, st.section); err != nil {
			return nil, nil, fmt.Errorf("config file %s: %w", name, err)
		}
		if root == nil {
			return map[string]any{}, nil, nil
		}
		mp, _ = sectionOf(mp, st.section)
	}
	w := &fileWalker{st: st, layer: LayerFile, name: name, idx: indexYAML(root)}
	tree, clients := w.top(mp)
	return tree, clients, nil
}

// top checks the top level of a layer's tree: the sections defaults and
// clients. It returns the canonical tree and the client names it defines.
func (w *fileWalker) top(mp map[string]any) (map[string]any, []string) {
	tree := map[string]any{}
	var clients []string
	for _, k := range slices.Sorted(maps.Keys(mp)) {
		switch k {
		case "defaults":
			if sec := w.section("defaults", clientSchema, mp[k]); sec != nil {
				tree["defaults"] = sec
			}
		case "clients":
			cs := w.clients(mp[k])
			tree["clients"] = cs
			clients = slices.Sorted(maps.Keys(cs))
		default:
			hint := suggest(k, []string{"clients", "defaults"})
			if m, ok := asMap(mp[k]); ok && hint == "" && w.st.section == "" {
				// The application's own file, with the client config
				// in a section: say how to read it from there.
				if _, c := m["clients"]; c || m["defaults"] != nil {
					hint = "Section: " + strconv.Quote(k) + " (the CLI's --section " + k + ")"
				}
			}
			w.fail(k, "unknown key", hint)
		}
	}
	return tree, clients
}

// fileWalker checks a parsed YAML tree, or a Source's tree, against the
// schema.
type fileWalker struct {
	st    *loadState
	layer Layer  // LayerFile or LayerSource
	name  string // the file path or the Source's name
	idx   yamlIndex
}

// fail reports a problem at the raw key path p.
func (w *fileWalker) fail(p, msg, hint string) {
	fe := &FieldError{Path: p, Line: w.idx.lines[p], Msg: msg, Hint: hint}
	if w.layer == LayerSource {
		fe.SetBy = "source " + w.name
	}
	w.st.errs = append(w.st.errs, fe)
}

// set records that the layer set the key at path (line taken from raw path).
func (w *fileWalker) set(path, raw string) {
	w.st.origins[path] = Origin{Layer: w.layer, Name: w.name, Line: w.idx.lines[raw], Path: path}
}

// clients checks the `clients` section: a map of client name to section.
func (w *fileWalker) clients(v any) map[string]any {
	out := map[string]any{}
	if v == nil {
		return out
	}
	m, ok := asMap(v)
	if !ok {
		w.fail("clients", "must be a map of client name to client section, got "+describe(v, clientSchema.holdsSecret), "")
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := "clients." + name
		if !clientNameRE.MatchString(name) {
			w.fail(p, fmt.Sprintf("client name %s must match %s", quoteShort(name), clientNameRE), "")
			continue
		}
		if sec := w.section(p, clientSchema, m[name]); sec != nil {
			out[name] = sec
		}
	}
	return out
}

// section checks the section at path against f. A null section is empty.
// It returns nil when v is not a map at all.
func (w *fileWalker) section(path string, f *field, v any) map[string]any {
	out := map[string]any{}
	if v == nil {
		return out
	}
	m, ok := asMap(v)
	if !ok {
		w.fail(path, "must be a section (a map of keys), got "+describe(v, f.holdsSecret), "")
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := path + "." + k
		if k == "routes" && f == clientSchema {
			if !strings.HasPrefix(path, "clients.") {
				w.fail(p, "only a client section may set routes, not "+path, "")
				continue
			}
			if rs := w.routes(p, m[k]); rs != nil {
				out[k] = rs
			}
			continue
		}
		c := f.children[k]
		if c == nil {
			w.fail(p, "unknown key", suggestKey(k, f.names))
			continue
		}
		switch c.kind {
		case kindSection:
			if sec := w.section(p, c, m[k]); sec != nil {
				out[k] = sec
			}
		case kindStringMap:
			if h := w.headers(p, c, m[k]); h != nil {
				out[k] = h
			}
		default:
			val, msg := w.value(c, p, m[k])
			if msg != "" {
				w.fail(p, msg, "")
				continue
			}
			out[k] = val
			w.set(p, p)
		}
	}
	return out
}

// routes checks a client's `routes`: a map of http.ServeMux pattern to a
// route section, which may set timeout, headers, retry (but not
// retry.budget) and hedge. Its keys are spelled with the pattern quoted:
// clients.billing.routes."POST /v1/charges".timeout. Patterns themselves
// are checked by Validate, which sees every layer's.
func (w *fileWalker) routes(path string, v any) map[string]any {
	out := map[string]any{}
	if v == nil {
		return out
	}
	m, ok := asMap(v)
	if !ok {
		w.fail(path, "must be a map of route pattern to route section, got "+describe(v, clientSchema.holdsSecret), "")
		return nil
	}
	for _, pattern := range slices.Sorted(maps.Keys(m)) {
		rp := path + "." + strconv.Quote(pattern)
		if m[pattern] == nil {
			out[pattern] = map[string]any{}
			continue
		}
		rm, ok := asMap(m[pattern])
		if !ok {
			w.fail(rp, "must be a route section (a map of keys), got "+describe(m[pattern], clientSchema.holdsSecret), "")
			continue
		}
		allowed := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(rm)) {
			switch {
			case clientSchema.children[k] == nil:
				w.fail(rp+"."+k, "unknown key", suggest(k, routeTopKeys))
			case !routeAllowed(k):
				w.fail(rp+"."+k, "not allowed in a route: a route may set only timeout, headers, retry (but not retry.budget) and hedge", "")
			case k == "retry":
				if sub, ok := asMap(rm[k]); ok {
					if _, has := sub["budget"]; has {
						w.fail(rp+".retry.budget", "not allowed in a route: the retry budget is the client's, shared by its routes", "")
						sub = maps.Clone(sub)
						delete(sub, "budget")
					}
					allowed[k] = sub
				} else {
					allowed[k] = rm[k]
				}
			default:
				allowed[k] = rm[k]
			}
		}
		if sec := w.section(rp, clientSchema, allowed); sec != nil {
			out[pattern] = sec
		}
	}
	return out
}

// value converts the leaf value v at path p. A Source may hand in text for
// any kind (key-value stores hold strings): it is read like an env value.
func (w *fileWalker) value(f *field, p string, v any) (any, string) {
	if s, ok := v.(string); ok && w.layer == LayerSource && f.kind != kindString {
		return fromText(f, s)
	}
	return fromYAML(f, v, func(suffix string) (string, bool) {
		s, ok := w.idx.texts[p+suffix]
		return s, ok
	})
}

// headers checks a `headers` map. Names are put in canonical form
// (user-agent → User-Agent), so that layers and defaults merge them
// case-insensitively; values are never shown in errors.
func (w *fileWalker) headers(path string, f *field, v any) map[string]any {
	out := map[string]any{}
	if v == nil {
		return out
	}
	m, ok := asMap(v)
	if !ok {
		w.fail(path, "must be a map of header name to value, got "+describe(v, f.holdsSecret), "")
		return nil
	}
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := path + "." + name
		cn := canonicalHeader(name)
		if prev, dup := seen[cn]; dup {
			w.fail(p, fmt.Sprintf("duplicate header: %s and %s name the same header", quoteShort(prev), quoteShort(name)), "")
			continue
		}
		seen[cn] = name
		s, ok := yamlString(m[name], func() (string, bool) {
			s, ok := w.idx.texts[p]
			return s, ok
		})
		if !ok {
			w.fail(p, "must be a string, got "+describe(m[name], headerValue.holdsSecret), "")
			continue
		}
		out[cn] = s
		w.set(path+"."+cn, p)
	}
	return out
}

// isRoutesPath reports whether the raw path is a client's `routes`
// section, clients.<name>.routes (client names have no dot).
func isRoutesPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "clients.")
	return ok && strings.Count(rest, ".") == 1 && strings.HasSuffix(rest, ".routes")
}

// asMap returns v as a map with string keys.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// yamlIndex maps raw key paths of the file to the line of the key and, for
// scalars, to their literal text ("a.b" for a value, "a.b[2]" for a list item).
type yamlIndex struct {
	lines map[string]int
	texts map[string]string
}

// indexYAML indexes the mapping node root. Aliases are not followed, so
// keys that come from an anchor have no line.
func indexYAML(root *yaml.Node) yamlIndex {
	idx := yamlIndex{lines: map[string]int{}, texts: map[string]string{}}
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yaml.ScalarNode || k.Value == "<<" {
					continue
				}
				p := joinPath(path, k.Value)
				if isRoutesPath(path) { // a route pattern: spelled quoted, as errors show it
					p = path + "." + strconv.Quote(k.Value)
				}
				if _, dup := idx.lines[p]; !dup {
					idx.lines[p] = k.Line
				}
				if v.Kind == yaml.ScalarNode {
					idx.texts[p] = v.Value
				}
				walk(p, v)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if c.Kind == yaml.ScalarNode {
					idx.texts[fmt.Sprintf("%s[%d]", path, i)] = c.Value
				}
			}
		}
	}
	walk("", root)
	return idx
}

// sectionNode returns the mapping node at the dotted key path section
// under root. A missing section is an error with the nearest key of its
// level as a hint; a null one (the key with nothing under it) is nil, an
// empty config.
func sectionNode(root *yaml.Node, section string) (*yaml.Node, error) {
	n := root
	var at []string
	for _, seg := range strings.Split(section, ".") {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: %s must be a map holding the client config, got %s", n.Line, strings.Join(at, "."), nodeKind(n))
		}
		var keys []string
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
			if n.Content[i].Value == seg {
				next = n.Content[i+1]
			}
		}
		at = append(at, seg)
		if next == nil {
			msg := "no section " + strings.Join(at, ".") + " (Section)"
			if h := suggest(seg, keys); h != "" {
				return nil, fmt.Errorf("%s; did you mean %s?", msg, strings.Join(append(at[:len(at)-1:len(at)-1], h), "."))
			}
			return nil, errors.New(msg)
		}
		n = next
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s must be a map holding the client config, got %s", n.Line, section, nodeKind(n))
	}
	return n, nil
}

// nodeKind names what a YAML node holds, for errors (never its value).
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a value"
	}
	return "an alias"
}

// sectionOf returns the map at the dotted key path section of tree; ok is
// false when some level is missing or not a map.
func sectionOf(tree map[string]any, section string) (map[string]any, bool) {
	m := tree
	for _, seg := range strings.Split(section, ".") {
		next, ok := asMap(m[seg])
		if !ok {
			return map[string]any{}, false
		}
		m = next
	}
	return m, true
}
