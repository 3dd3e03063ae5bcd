package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Referenced files (secret files, TLS files) are checked by content, not
// only for being readable, so that Load reports their problems together
// with every other error of the load instead of leaving them to the
// factory, which would show them only once the rest is fixed.

// NamedFiles returns the files named by the config whose load failed with
// err, as Config.Files lists them for a load that succeeds: the config
// file, then every secret and TLS file the defaults or a client names. A
// config rejected because a file it names is missing still names it, so a
// watcher can watch for that file and reload once it appears. It returns
// nil when the load failed before the config was decoded (unreadable or
// malformed YAML, a Source's Read) and for an error Load did not return.
// Safe for concurrent use.
func NamedFiles(err error) []string {
	var nf *namedFilesError
	if errors.As(err, &nf) {
		return nf.files
	}
	return nil
}

// namedFilesError is a Load error with the files its config names (see
// NamedFiles); it reads as err.
type namedFilesError struct {
	err   error
	files []string
}

func (e *namedFilesError) Error() string { return e.err.Error() }
func (e *namedFilesError) Unwrap() error { return e.err }

// withNamedFiles returns err carrying files for NamedFiles.
func withNamedFiles(err error, files []string) error {
	return &namedFilesError{err: err, files: files}
}

// SecretFromFile returns the secret b holds, b being the content of the
// secret file at path (auth.bearer_token_file, auth.basic.password_file):
// its text with blanks around it trimmed. An empty text, or one of more
// than one line or with a NUL byte, is an error that names path, never
// the content. Load's validation and the factory's reading of the files
// both use it, so they agree on what a good file is. Safe for concurrent
// use.
func SecretFromFile(path string, b []byte) (string, error) {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "":
		return "", fmt.Errorf("file %s is empty", path)
	case strings.ContainsAny(s, "\r\n\x00"):
		return "", fmt.Errorf("file %s holds more than one line (or a NUL byte)", path)
	}
	return s, nil
}

// CAPoolFromPEM returns the certificate pool of the CA bundle pem, the
// content of tls.ca_file at path; a bundle with no PEM certificate is an
// error naming path. Load's validation and the factory's building of the
// transport both use it. Safe for concurrent use.
func CAPoolFromPEM(path string, pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", path)
	}
	return pool, nil
}

// KeyPairFromPEM returns the client key pair of cert and key, the contents
// of tls.cert_file and tls.key_file at certPath and keyPath; an error names
// both files and describes the problem, never the key (X509KeyPair's
// errors do not quote it). Load's validation and the factory both use it.
// Safe for concurrent use.
func KeyPairFromPEM(certPath, keyPath string, cert, key []byte) (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s with %s: %w", certPath, keyPath, err)
	}
	return pair, nil
}

// readFile reads the file at path for key, reporting a problem; ok is false
// when there is nothing to check further (no path, or a problem reported).
func (v *validator) readFile(key, path string) ([]byte, bool) {
	if path == "" {
		return nil, false
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		v.fail(key, "cannot read file %s: is a directory", quoteShort(path))
		return nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		v.fail(key, "cannot read file: %v", err)
		return nil, false
	}
	return b, true
}

// secretFile checks the secret file at path for key (see SecretFromFile).
func (v *validator) secretFile(key, path string) {
	b, ok := v.readFile(key, path)
	if !ok {
		return
	}
	if _, err := SecretFromFile(path, b); err != nil {
		v.fail(key, "%v", err)
	}
	clear(b) // it held the secret
}

// tlsFiles checks the files of the tls block t: the CA bundle holds a PEM
// certificate, and the certificate and key make a key pair.
func (v *validator) tlsFiles(t TLSConfig) {
	if pem, ok := v.readFile("tls.ca_file", t.CAFile); ok {
		if _, err := CAPoolFromPEM(t.CAFile, pem); err != nil {
			v.fail("tls.ca_file", "%v", err)
		}
	}
	cert, certOK := v.readFile("tls.cert_file", t.CertFile)
	key, keyOK := v.readFile("tls.key_file", t.KeyFile)
	if certOK && keyOK {
		if _, err := KeyPairFromPEM(t.CertFile, t.KeyFile, cert, key); err != nil {
			v.failAbout("tls.cert_file", []string{"tls.key_file"}, "%v", err)
		}
	}
	clear(key)
}
