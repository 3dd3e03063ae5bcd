package factory_test

import (
	"bufio"
	"io"
	"net/http"
	"testing"

	"github.com/switchboard-http/switchboard/factory"
)

// A protocol upgrade (101 Switching Protocols) hands the connection to the
// caller as a body that is also an io.Writer; every layer of the default
// pipeline must keep it one, or WebSocket-style clients break.
func TestUpgradeKeepsTheConnectionWritable(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		brw.WriteString("echo: " + line)
		brw.Flush()
	})
	r, err := factory.New(defaultsWithRetries(2), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := r.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status: got %d, want 101", resp.StatusCode)
	}
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("the 101 body (%T) is not an io.ReadWriteCloser", resp.Body)
	}
	if _, err := io.WriteString(rw, "hello\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil || got != "echo: hello\n" {
		t.Fatalf("got %q, %v; want %q", got, err, "echo: hello\n")
	}
}
