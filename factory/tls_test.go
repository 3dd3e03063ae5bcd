package factory_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
)

// writeBytes writes content to name in dir and returns its path.
func writeBytes(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	atomicfile.Write(t, p, string(content))
	return p
}

// newTLSServer starts an HTTPS server that answers 200 and serves the
// certificate cert points to (swap it to rotate the server's certificate).
// With clientCAs it requires a client certificate signed by one of them.
func newTLSServer(t *testing.T, cert *atomic.Pointer[tls.Certificate], clientCAs *x509.CertPool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			w.Header().Set("X-Client", r.TLS.PeerCertificates[0].Subject.CommonName)
		}
	}))
	// GetConfigForClient runs for every handshake, with or without SNI (a
	// client dialing 127.0.0.1 sends none), so a swapped certificate is
	// served from the next connection on.
	srv.TLS = &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := &tls.Config{Certificates: []tls.Certificate{*cert.Load()}}
			if clientCAs != nil {
				c.ClientAuth = tls.RequireAndVerifyClientCert
				c.ClientCAs = clientCAs
			}
			return c, nil
		},
	}
	// A failed handshake is what some of these tests expect; keep the
	// server's log quiet about it.
	srv.Config.ErrorLog = discardStdLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestMutualTLSHandshake(t *testing.T) {
	ca := newCA(t, "test CA")
	_, _, serverPair := ca.issue(t, "server", true)
	clientCert, clientKey, _ := ca.issue(t, "billing-client", false)
	var cert atomic.Pointer[tls.Certificate]
	cert.Store(&serverPair)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := newTLSServer(t, &cert, pool)

	dir := t.TempDir()
	caFile := writeBytes(t, dir, "ca.pem", ca.pem)
	certFile := writeBytes(t, dir, "client.pem", clientCert)
	keyFile := writeBytes(t, dir, "client.key", clientKey)
	r, _ := openFile(t, "clients:\n"+
		"  mtls:\n    tls: {ca_file: "+caFile+", cert_file: "+certFile+", key_file: "+keyFile+", min_version: \"1.3\"}\n"+
		"  nocert:\n    retry: {max_retries: 0}\n    tls: {ca_file: "+caFile+"}\n",
		factory.Options{NoWatch: true, Logger: discard()})

	resp := get(t, r.Get("mtls"), srv.URL)
	if got := resp.Header.Get("X-Client"); got != "billing-client" {
		t.Fatalf("server saw client certificate %q, want billing-client", got)
	}
	if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
		t.Fatalf("got TLS state %+v, want TLS 1.3", resp.TLS)
	}
	if _, err := r.Get("nocert").Get(srv.URL); err == nil {
		t.Fatal("without a client certificate: got a response, want a handshake error")
	}
}

func TestCARotatedOnDiskIsUsedByNextConnection(t *testing.T) {
	oldCA, newCA := newCA(t, "old CA"), newCA(t, "new CA")
	_, _, oldPair := oldCA.issue(t, "server", true)
	_, _, newPair := newCA.issue(t, "server", true)
	var cert atomic.Pointer[tls.Certificate]
	cert.Store(&oldPair)
	srv := newTLSServer(t, &cert, nil)

	dir := t.TempDir()
	caFile := writeBytes(t, dir, "ca.pem", oldCA.pem)
	// Keep-alives off: every request opens a new connection, so each one
	// shows which CA the client trusts now.
	r, _ := openFile(t, "clients:\n  billing:\n    retry: {max_retries: 0}\n    transport: {disable_keep_alives: true}\n    tls: {ca_file: "+caFile+"}\n",
		factory.Options{NoWatch: true, Logger: discard()})
	c := r.Get("billing")
	get(t, c, srv.URL)

	// An invalid CA file is rejected, names the key, and the old CA keeps
	// serving.
	writeBytes(t, dir, "ca.pem", []byte("not a certificate"))
	err := r.Reload()
	if err == nil || !strings.Contains(err.Error(), "clients.billing.tls.ca_file") {
		t.Fatalf("invalid CA file: got %v, want an error naming clients.billing.tls.ca_file", err)
	}
	if st := r.Status(); st.LastError == nil || st.Generation != 1 {
		t.Fatalf("after a rejected reload: got generation %d, error %v; want 1 and the error", st.Generation, st.LastError)
	}
	get(t, c, srv.URL)

	// The server moves to a certificate of the new CA: the client does not
	// trust it yet.
	cert.Store(&newPair)
	if _, err := c.Get(srv.URL); err == nil {
		t.Fatal("server certificate of an untrusted CA: got a response, want an error")
	}
	writeBytes(t, dir, "ca.pem", newCA.pem)
	if err := r.Reload(); err != nil {
		t.Fatalf("Reload after rotating the CA: %v", err)
	}
	get(t, c, srv.URL)
	if st := r.Status(); st.LastError != nil || st.Generation != 2 {
		t.Fatalf("after rotating the CA: got generation %d, error %v; want 2, nil", st.Generation, st.LastError)
	}
}

func TestInsecureSkipVerifyIsLoggedAtEveryLoad(t *testing.T) {
	logger, logs := logcapture.New()
	r, path := openFile(t, "clients:\n  legacy:\n    tls: {insecure_skip_verify: true}\n  billing: {}\n",
		factory.Options{NoWatch: true, Logger: logger})
	const msg = "tls.insecure_skip_verify is on: the server's certificate is not verified"
	count := func() int {
		n := 0
		for _, rec := range logs.Records(t, msg) {
			if rec["level"] != "WARN" || rec["client"] != "legacy" {
				t.Fatalf("got %v, want a WARN naming client legacy", rec)
			}
			n++
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("after Open: got %d WARNs, want 1", n)
	}
	atomicfile.Write(t, path, "clients:\n  legacy:\n    tls: {insecure_skip_verify: true}\n  billing: {timeout: 5s}\n")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("after a reload: got %d WARNs, want 2", n)
	}
}

func TestSecretFileErrorsNameTheKeyNotTheContent(t *testing.T) {
	dir := t.TempDir()
	token := writeBytes(t, dir, "token", []byte("first-token-value\n"))
	r, _ := openFile(t, "clients:\n  billing:\n    auth: {host: billing.test, bearer_token_file: "+token+"}\n",
		factory.Options{NoWatch: true, Logger: discard()})

	// A token file holding two lines is rejected, without its content.
	writeBytes(t, dir, "token", []byte("second-token-value\nsecond-line\n"))
	err := r.Reload()
	if err == nil || !strings.Contains(err.Error(), "clients.billing.auth.bearer_token_file:") {
		t.Fatalf("got %v, want an error naming clients.billing.auth.bearer_token_file", err)
	}
	if strings.Contains(err.Error(), "second-token") || strings.Contains(err.Error(), "first-token") {
		t.Fatalf("the error holds the token: %v", err)
	}
	// An empty one too.
	writeBytes(t, dir, "token", []byte("\n"))
	if err := r.Reload(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty token file: got %v, want an error", err)
	}
	// A missing one: the loader rejects it first, naming the key too.
	if err := os.Remove(token); err != nil {
		t.Fatal(err)
	}
	err = r.Reload()
	if err == nil || !strings.Contains(err.Error(), "clients.billing.auth.bearer_token_file") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing token file: got %v, want an error naming the key and the missing file", err)
	}
	if st := r.Status(); st.Generation != 1 {
		t.Fatalf("after rejected reloads: got generation %d, want 1", st.Generation)
	}
}
