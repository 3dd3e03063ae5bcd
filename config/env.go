package config

import (
	"cmp"
	"hash"
	"slices"
	"strings"

	"github.com/knadh/koanf/providers/env/v2"
)

// nul is the key delimiter given to koanf's env and posflag providers so
// that they keep names flat: no variable or flag name contains it.
const nul = "\x00"

// envVar is one prefixed environment variable.
type envVar struct{ name, value string }

// envLayer turns the variables starting with prefix (case-insensitively) into
// a canonical tree. Each variable names one key: the rest of its name, split
// at "__", is the key path (see the package documentation for client and
// header names). Variables that name no key, and values that do not parse
// as the key's kind, are reported in st.errs naming the variable. The
// variables, sorted, are written to ih.
func (st *loadState) envLayer(prefix string, environ []string, fileClients []string, ih hash.Hash) map[string]any {
	// koanf's env provider reads the environment; the prefix is matched
	// here, case-insensitively, and the flat name → value map is kept as is
	// (an unlikely NUL delimiter stops it from nesting keys).
	flat, _ := env.Provider(nul, env.Opt{
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
				return "", nil
			}
			// A NUL cannot be in a real variable's name, but Environ is
			// code's: keep such a name flat so that it is reported.
			return strings.ReplaceAll(name, nul, "\x00"), value
		},
	}).Read()
	vars := make([]envVar, 0, len(flat))
	for name, value := range flat {
		s, _ := value.(string) // always a string: no name holds the delimiter
		vars = append(vars, envVar{name, s})
	}
	slices.SortFunc(vars, func(a, b envVar) int { return cmp.Compare(a.name, b.name) })

	tree := map[string]any{}
	setBy := map[string]string{} // full path → variable
	for _, v := range vars {
		input := "env " + v.name
		rest := v.name[len(prefix):]
		switch envShape(rest, fileClients) {
		case envOther:
			// Not switchboard's (a Kubernetes service link such as
			// SVC_PORT): ignored, and kept out of the hash, so it
			// changes nothing.
			st.envIgnored = append(st.envIgnored, v.name)
			continue
		case envSingle:
			st.errs = append(st.errs, &FieldError{Path: strings.ToLower(strings.ReplaceAll(rest, "__", ".")), Input: input,
				Msg:  "names no key: a level ends with __ (two underscores), as in " + prefix + "CLIENTS__<NAME>__<KEY>",
				Hint: v.name[:len(prefix)] + envRepair(rest, fileClients)})
			continue
		}
		writeHashField(ih, "env", v.name, v.value)
		parts := strings.Split(rest, "__")
		if st.dropUndefined && len(parts) > 1 && strings.EqualFold(parts[0], "clients") && !envClientDefined(parts[1], fileClients) {
			st.dropped = append(st.dropped, input)
			continue
		}
		segs, f, fe := resolveEnv(parts, fileClients)
		if fe != nil {
			fe.Input = input
			// The whole name repaired beats the nearest key of one level.
			if fix := envRepair(rest, fileClients); fix != "" {
				fe.Hint = v.name[:len(prefix)] + fix
			}
			st.errs = append(st.errs, fe)
			continue
		}
		path := strings.Join(segs, ".")
		if other, dup := setBy[path]; dup {
			st.errs = append(st.errs, &FieldError{Path: path, Input: input, Msg: "sets the same key as env " + other})
			continue
		}
		val, msg := fromText(f, v.value)
		if msg != "" {
			st.errs = append(st.errs, &FieldError{Path: path, Input: input, Msg: msg})
			continue
		}
		setBy[path] = v.name
		setPath(tree, segs, val)
		st.origins[path] = Origin{Layer: LayerEnv, Name: v.name, Path: path}
	}
	return tree
}

// resolveEnv maps the "__"-separated parts of a variable name after the
// prefix to a key path and its field. Key names match case-insensitively;
// a client name matches the file's clients case-insensitively with "_" and
// "-" alike, or else becomes a new client named in lower case; a header name
// has "_" turned into "-" and is put in canonical form.
func resolveEnv(parts []string, fileClients []string) ([]string, *field, *FieldError) {
	lowerPath := strings.ToLower(strings.Join(parts, "."))
	if strings.Trim(lowerPath, ".") == "" {
		// The prefix alone, or only separators: Path is never empty.
		return nil, nil, &FieldError{Path: "(none)", Msg: "names no key: want DEFAULTS__<KEY> or CLIENTS__<NAME>__<KEY>"}
	}
	unknown := func(hint string) *FieldError {
		return &FieldError{Path: lowerPath, Msg: "unknown key " + lowerPath, Hint: strings.ReplaceAll(strings.ToUpper(hint), " OR ", " or ")}
	}
	var segs []string
	var rest []string
	switch strings.ToLower(parts[0]) {
	case "defaults":
		segs, rest = []string{"defaults"}, parts[1:]
	case "clients":
		if len(parts) < 2 || parts[1] == "" {
			return nil, nil, &FieldError{Path: lowerPath, Msg: "names no client: want CLIENTS__<NAME>__<KEY>"}
		}
		name, fe := envClientName(parts[1], fileClients)
		if fe != nil {
			fe.Path = lowerPath
			return nil, nil, fe
		}
		segs, rest = []string{"clients", name}, parts[2:]
	default:
		return nil, nil, unknown(suggest(strings.ToLower(parts[0]), []string{"clients", "defaults"}))
	}
	rel, f, hint, res := resolveRel(rest, true)
	switch res {
	case relUnknown:
		return nil, nil, unknown(hint)
	case relSection:
		return nil, nil, &FieldError{Path: lowerPath, Msg: lowerPath + " is a section, not a key: name one of its keys"}
	}
	return append(segs, rel...), f, nil
}

// envClientName maps the client part of a variable name to a client name:
// one the file or a Source defines, matched case-insensitively with "_"
// and "-" alike. A name they do not define is an error (see noClient): a
// variable cannot create a client, so a typo does not start one.
func envClientName(part string, fileClients []string) (string, *FieldError) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "_")) }
	want := norm(part)
	var found []string
	for _, c := range fileClients {
		if norm(c) == want {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		// As the README's env rules say, BILLING_V2 is billing-v2: env names cannot
		// hold "-", so "_" in a client's name stands for it.
		name := strings.ToLower(strings.ReplaceAll(part, "_", "-"))
		if !clientNameRE.MatchString(name) {
			return "", &FieldError{Msg: "client name " + quoteShort(name) + " must match " + clientNameRE.String()}
		}
		normed := make([]string, len(fileClients))
		for i, c := range fileClients {
			normed[i] = norm(c)
		}
		hint := ""
		if h := suggest(want, normed); h != "" {
			hint = fileClients[slices.Index(normed, h)]
		}
		return "", noClient(strings.ToLower(part), hint)
	case 1:
		return found[0], nil
	}
	return "", &FieldError{Msg: "client name " + quoteShort(part) + " matches several clients of the file: " + strings.Join(found, ", ")}
}

// noClient is the error for an env variable or flag naming a client that
// neither the file nor a Source defines, with hint the nearest defined
// name ("" when none is close):
//
//	no client "biling"; did you mean billing?
//	no client "x" in the file or sources; define it there first
func noClient(name, hint string) *FieldError {
	if hint != "" {
		return &FieldError{Msg: "no client " + quoteShort(name), Hint: hint}
	}
	return &FieldError{Msg: "no client " + quoteShort(name) + " in the file or sources; define it there first"}
}

// The shapes of the rest of a prefixed variable's name (after the prefix).
const (
	envOurs   = iota // EnvIsOurs, a bare section name, or a typo of one before "__"
	envSingle        // "_" where "__" is meant, naming a real key (see envRepair)
	envOther         // anything else: not switchboard's, ignored
)

// EnvIsOurs reports whether the environment variable name is
// switchboard's under prefix: whether, case-insensitively, it starts with
// prefix followed by DEFAULTS__ or CLIENTS__. Every other variable under
// the prefix (such as the service links Kubernetes sets for a Service named
// like the prefix: SVC_PORT, SVC_SERVICE_HOST, SVC_CLIENTS_PORT for a
// Service named svc-clients) is no input of a Loader, save the misspellings
// of switchboard's names it reports (see the package documentation). The
// zero prefix matches every name's start. It is safe for concurrent use.
func EnvIsOurs(prefix, name string) bool {
	if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
		return false
	}
	up := strings.ToUpper(name[len(prefix):])
	return strings.HasPrefix(up, "DEFAULTS__") || strings.HasPrefix(up, "CLIENTS__")
}

// envShape tells whether rest, a variable's name after the prefix, is
// switchboard's: see EnvIsOurs, the one rule, so that a prefix shared with
// a Kubernetes Service's links (SVC_PORT, SVC_SERVICE_HOST,
// SVC_CLIENTS_SERVICE_HOST) cannot fail the load. Beside it, the misspellings
// of switchboard's names are worth an error, not silence: the bare section
// names; a name with "_" where "__" is meant that, so repaired, names a
// real key (envRepair), which a kubelet link never does; and a name holding
// "__" whose first part is a typo of DEFAULTS or CLIENTS (DEFAULT__TIMEOUT):
// "__" is switchboard's spelling, and Kubernetes never writes it (a Service
// name is a DNS label).
func envShape(rest string, fileClients []string) int {
	if EnvIsOurs("", rest) {
		return envOurs
	}
	up := strings.ToUpper(rest)
	if up == "DEFAULTS" || up == "CLIENTS" {
		return envOurs
	}
	if envRepair(rest, fileClients) != "" {
		return envSingle
	}
	if first, _, ok := strings.Cut(up, "__"); ok && suggest(first, []string{"DEFAULTS", "CLIENTS"}) != "" {
		return envOurs
	}
	return envOther
}

// envClientDefined reports whether part, the client part of a variable's
// name, names a client the file or a Source defines (see envClientName).
func envClientDefined(part string, fileClients []string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "_")) }
	return slices.ContainsFunc(fileClients, func(c string) bool { return norm(c) == norm(part) })
}

// envRepair returns the one variable name (after the prefix) that rest
// spells with "_" where "__" is meant, such as CLIENTS__BILLING__RETRY__MAX_RETRIES
// for CLIENTS_BILLING__RETRY_MAX_RETRIES, or "" when none or several do.
// Names compare with every run of underscores as one, over every key of
// `defaults` and of each defined client (headers aside).
func envRepair(rest string, fileClients []string) string {
	flat := func(s string) string {
		s = strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
		for strings.Contains(s, "__") {
			s = strings.ReplaceAll(s, "__", "_")
		}
		return s
	}
	want := flat(rest)
	var found []string
	for _, l := range keyTable {
		if l.kind == kindStringMap {
			continue
		}
		key := strings.ToUpper(strings.ReplaceAll(l.path, ".", "__"))
		cands := []string{"DEFAULTS__" + key}
		for _, c := range fileClients {
			cands = append(cands, "CLIENTS__"+strings.ToUpper(strings.ReplaceAll(c, "-", "_"))+"__"+key)
		}
		for _, c := range cands {
			if flat(c) == want && c != strings.ToUpper(rest) {
				found = append(found, c)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}
