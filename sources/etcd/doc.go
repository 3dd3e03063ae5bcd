// Package etcdsource is a switchboard config.Source kept in etcd, so a
// fleet of processes shares one configuration and picks up each change
// within the reload debounce. Import it as
//
//	import etcdsource "github.com/switchboard-http/switchboard/sources/etcd"
//
// It lives in a module of its own, so that an application without etcd
// does not depend on etcd's client.
//
// The Source is a thin layer over go.etcd.io/etcd/client/v3: the
// application makes the *clientv3.Client (endpoints, TLS, auth, dial
// options are the client's) and closes it; the Source reads with Get and
// watches with Watch. Two layouts are supported:
//
//   - Key: one key holds the whole clients.yaml, as YAML
//     ("/switchboard/clients.yaml"). Put the file with
//     `etcdctl put /switchboard/clients.yaml "$(cat clients.yaml)"`.
//   - Prefix: one key per setting, its path after the prefix separated by
//     "/" or "." ("/switchboard/clients/billing/retry/max_retries" = "5",
//     or "/switchboard/clients.billing.retry.max_retries" = "5"), its
//     value text as env values have it ("5", "2s", "502,503").
//
// Layered as factory.Options.Sources, etcd sits above the file and below
// env and flags. Its values are checked like the file's, and errors and
// provenance name the source and key ("source
// etcd:/switchboard/clients.yaml: clients.billing.timeout: ..."). The Source implements
// config.ContextSource (each read is bounded by the caller's context and
// by Options.ReadTimeout) and config.Watchable (a watch that resumes from
// the last revision seen, re-established with backoff after errors, ended
// by stop). While etcd cannot be reached, a factory.Registry serves the
// Source's last good snapshot, marks it stale in Status().Sources and
// still applies edits of the file, env and flags; each such reload waits
// at most ReadTimeout for etcd.
package etcdsource
