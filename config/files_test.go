package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
)

// pemPair writes a self-signed certificate and its key as PEM files and
// returns their paths.
func pemPair(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write := func(path, typ string, b []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", der)
	write(keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func TestSecretFromFile(t *testing.T) {
	tests := []struct {
		name, content, want, err string
	}{
		{"trimmed", "  tok\n", "tok", ""},
		{"empty", " \n", "", "file /s is empty"},
		{"two lines", "a\nb\n", "", "file /s holds more than one line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.SecretFromFile("/s", []byte(tt.content))
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("SecretFromFile(%q): got %q, %v; want %q, %q", tt.content, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestLoadChecksTLSFileContent(t *testing.T) {
	cert, key := pemPair(t)
	junk := writeConfig(t, "not a certificate")
	mustLoad(t, config.Loader{File: writeConfig(t, "defaults:\n  tls: {ca_file: "+cert+", cert_file: "+cert+", key_file: "+key+"}\n")})
	mustFail(t, config.Loader{File: writeConfig(t, "defaults:\n  tls:\n    ca_file: "+junk+"\n    cert_file: "+junk+"\n    key_file: "+key+"\n")},
		"defaults.tls.ca_file: no PEM certificate in "+junk+" (line 3)",
		"defaults.tls.cert_file: "+junk+" with "+key+": tls: failed to find any PEM data in certificate input (line 4)")
}
