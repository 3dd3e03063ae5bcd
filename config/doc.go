// Package config is switchboard's file format: Config and ClientConfig, the
// built-in defaults, the layering of file, env and flags with koanf, the
// merge of `defaults` under each client, validation with full key paths,
// and provenance (which layer set each value).
//
// # Layering
//
// Loader.Load reads its layers, lowest first, into one fresh koanf instance,
// on the whole tree:
//
//	built-in defaults   Default(), as the `defaults` section
//	file                the YAML file (Loader.File)
//	sources             Consul, etcd, Vault, S3, … (Loader.Sources, see Source)
//	env                 SWITCHBOARD_… variables (Loader.EnvPrefix)
//	flags               --set key=value and flags named by key paths (Loader.Flags)
//
// Within the tree, maps merge key by key and everything else (scalars and
// lists) replaces. Only then is `defaults` merged under each
// `clients.<name>` section, key by key the same way. A key a client sets
// explicitly, to 0, false, "" or [] too, overrides the default. So with
//
//	# clients.yaml
//	defaults:
//	  timeout: 10s
//	clients:
//	  billing:
//	    timeout: 5s
//	  search: {}
//
// and SWITCHBOARD_DEFAULTS__TIMEOUT=2s, billing keeps 5s (its own key, from
// the file, is not beaten by a default from a higher layer) while search
// gets 2s. SWITCHBOARD_CLIENTS__BILLING__TIMEOUT=1s would change billing.
//
// # File
//
// Unknown keys, values of the wrong type and out-of-range values are
// *FieldError values naming the full key path and, from the file, the line;
// an unknown key that is a likely typo comes with the nearest valid key.
// Every error of a load is reported at once. Durations are Go duration
// strings ("500ms"); a bare number is an error (except 0), never
// nanoseconds. Number keys accept integers. Where a string is wanted, a
// scalar YAML reads as a number or boolean is taken as written
// (min_version: 1.2 is "1.2"). A key with no value (YAML null) is an error,
// except for a section (`billing:` alone is a client with every default)
// and `headers`. Header names are put in canonical form (user-agent is
// User-Agent), so they merge case-insensitively. A missing file, an empty
// one (nothing but blanks and comments) and malformed YAML are file-level
// errors naming the file.
//
// # Env
//
// A variable is the prefix plus the key path in capitals with "__" between
// levels: SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=5,
// SWITCHBOARD_DEFAULTS__TIMEOUT=2s. Matching is case-insensitive. A client
// name matches the file's clients case-insensitively with "_" and "-"
// alike (BILLING_V2 is billing-v2, or billing_v2 when that is the file's
// spelling). A variable cannot create a client: one naming a client that
// neither the file nor a Source defines is an error naming the variable and
// the nearest defined name (env SVC_CLIENTS__BILING__TIMEOUT: no client
// "biling"; did you mean billing?), or, when no name is close, saying to
// define the client there first; a typo never starts a client of its own.
// Under headers, "_" becomes "-" and the name
// is put in canonical form: …__HEADERS__X_REQUEST_SOURCE=abc sets
// X-Request-Source. Lists are comma-separated (…__RETRYABLE_STATUS=502,503;
// an empty value is the empty list). Only a variable whose name after the
// prefix starts with DEFAULTS__ or CLIENTS__ (any case) is switchboard's:
// every other one under the prefix, such as the service links Kubernetes
// sets for a Service named like the prefix (SVC_PORT, SVC_SERVICE_HOST), is
// ignored and listed in Config.EnvIgnored. A variable of switchboard's
// shape that names no key, or whose value does not parse as the key's
// kind, is an error naming the variable; one with "_" where "__" is meant
// that, so repaired, names a real key (SVC_CLIENTS_BILLING__TIMEOUT) is one
// too, with the name it meant as the hint, while any other (the links of a
// Service named svc-clients, such as SVC_CLIENTS_SERVICE_HOST) is ignored.
// EnvIsOurs is the rule. With Loader.DropUndefinedClients (a registry's reloads) a variable
// or flag naming an undefined client is dropped into Config.Dropped
// instead of failing the load.
//
// # Section
//
// With Loader.Section ("http_clients") the config is read from under that
// key path of the file and of every Source's tree, beside the
// application's own keys; errors and Provenance give full paths and the
// application file's lines.
//
// # Sources
//
// A Source is a layer kept elsewhere: a key-value or secret store, an
// object, a service. Its tree has the file's shape and is checked like the
// file (errors say "set by source <name>"); its values may also be text,
// parsed like env values. KoanfSource and KoanfSourceWith adapt koanf's
// providers of every shape (bytes with a parser, flat or nested trees, one
// document under one key; koanf ships Consul, etcd, Vault, S3, … as
// separate modules, which the application imports, not switchboard); a
// Source that implements Watchable makes factory.Open reload when it
// changes. The nested module sources/etcd has a ready etcd Source.
//
// # Flags
//
// RegisterFlags adds the repeatable --set key=value
// (--set clients.billing.timeout=2s). Flags the application defined itself
// whose names are key paths (fs.Duration("clients.billing.timeout", …))
// are taken too, when set. Values parse like env values. Flags the user did
// not set change nothing; flags named otherwise are the application's and
// are ignored. A --set naming no key is an error, and so is one naming a
// client the file and the Sources do not define, as for env variables.
//
// # Errors
//
// A value of the wrong kind reads the same from every layer (must be an
// integer, got "three"). Each error names where the key was set: its line
// in the file, or the env variable, flag or Source ("source etcd:
// clients.billing.timeout: …"); an error about two keys (attempt_timeout
// >= timeout) carries the line of the key it names. Load reports every
// error of a load together, those about referenced secret and TLS files
// (unreadable, empty, not PEM) included, sorted by file line, then key.
//
// # Secrets
//
// The values of auth.bearer_token and auth.basic.password (fields tagged
// secret:"true"), of header values and of transport.proxy_url never appear
// in an error, nor does a value written where a section holding one was
// expected (auth: "Bearer …", basic: "svc:pw", a client or route section,
// headers), whatever its shape. An inline secret with a line break (CR or
// LF) is rejected at load: it would fail every call.
//
// The key table's redaction column (the secret tag: "true" for a secret,
// "headers" for a header map, "url" for proxy_url) decides what output
// hides, and every type that can hold such a value prints it redacted, by
// every fmt verb (%v, %+v, %#v, %s, %q, %x …), encoding/json and slog: the
// two secret fields are middleware.Secret (REDACTED), a headers map is a
// Headers (the value of each sensitive header,
// middleware.IsSensitiveHeader, reads REDACTED) and the transport block a
// TransportConfig (proxy_url's userinfo and sensitive query values read
// REDACTED), so a ClientConfig, RouteConfig or Config printed in any way
// shows none of them. An empty value prints as it is. Code reads the values
// themselves by field (and a Secret with Reveal); ClientConfig.Redacted and
// Settings give the redacted copy.
package config
