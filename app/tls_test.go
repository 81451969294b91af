package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// tlsFront terminates mutual TLS (a server certificate for serverName, client certificates of
// ca required, ALPN h2 as gRPC wants) in front of the plain gRPC address backend, and returns its
// address. The dev server serves no TLS; this puts a TLS server in the client's path.
func tlsFront(t *testing.T, ca *testCA, serverName, backend string) string {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, serverName, true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = in.Close() }()
				if err := in.(*tls.Conn).Handshake(); err != nil {
					return
				}
				out, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer func() { _ = out.Close() }()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// The Temporal connection over mutual TLS, configured by the TEMPORAL_TLS_* variables only:
// the server's CA, its name, the client certificate and key. Without the client certificate, or
// with another server name, the connection is refused.
func TestDialOverMutualTLS(t *testing.T) {
	srv, _ := devServer(t)
	ca := newCA(t)
	front := tlsFront(t, ca, "temporal.internal", srv.Address())
	dir := isolate(t)
	certPEM, keyPEM := ca.issue(t, "kortyx-worker", false)
	t.Setenv("TEMPORAL_ADDRESS", front)
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})))
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.internal")
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", writeFile(t, dir, "client.pem", certPEM))
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", writeFile(t, dir, "client.key", keyPEM))

	c, err := Dial(ConfigFromEnv())
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)

	t.Run("no client certificate", func(t *testing.T) {
		t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", "")
		t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", "")
		_, err := Dial(ConfigFromEnv())
		require.ErrorContains(t, err, "kortyx: cannot reach Temporal at "+front)
	})
	t.Run("another server name", func(t *testing.T) {
		t.Setenv("TEMPORAL_TLS_SERVER_NAME", "other.internal")
		_, err := Dial(ConfigFromEnv())
		require.ErrorContains(t, err, "kortyx: cannot reach Temporal at "+front)
		require.ErrorContains(t, err, "other.internal")
	})
}
