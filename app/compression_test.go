package app

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // registers "gzip", which countingGzip wraps
)

// countingGzip is gRPC's gzip compressor, counting the messages it decompresses: the test's
// gRPC server decompresses a request only when the client compressed it, and the client an
// answer only when the server compressed it (gRPC answers in the request's compression).
type countingGzip struct {
	encoding.Compressor
	decompressed atomic.Int64
}

func (c *countingGzip) Decompress(r io.Reader) (io.Reader, error) {
	c.decompressed.Add(1)
	return c.Compressor.Decompress(r)
}

var gzipCounter = func() *countingGzip {
	c := &countingGzip{Compressor: encoding.GetCompressor("gzip")}
	encoding.RegisterCompressor(c)
	return c
}()

// namespaceServer is a Temporal frontend that answers GetSystemInfo (which a client calls when
// it dials) and DescribeNamespace.
type namespaceServer struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (namespaceServer) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (namespaceServer) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest) (*workflowservice.DescribeNamespaceResponse, error) {
	return &workflowservice.DescribeNamespaceResponse{NamespaceInfo: &namespacepb.NamespaceInfo{Name: "kortyx"}}, nil
}

// A process's Temporal client sends its requests uncompressed unless KORTYX_GRPC_COMPRESSION
// is gzip, and the server answers in kind: counted in one process, the client's and the gRPC
// server's in its path, which decompress what the other compressed.
func TestDialCompression(t *testing.T) {
	g := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(g, namespaceServer{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)

	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", 0},
		{"none", 0},
		{"gzip", 6}, // 3 requests, 3 answers
	} {
		t.Run("KORTYX_GRPC_COMPRESSION="+tc.env, func(t *testing.T) {
			isolate(t)
			t.Setenv("TEMPORAL_ADDRESS", ln.Addr().String())
			if tc.env != "" {
				t.Setenv("KORTYX_GRPC_COMPRESSION", tc.env)
			}
			cfg := ConfigFromEnv()
			require.NoError(t, cfg.Err())
			c, err := Dial(cfg)
			require.NoError(t, err)
			defer c.Close()
			before := gzipCounter.decompressed.Load()
			for range 3 {
				_, err := c.WorkflowService().DescribeNamespace(context.Background(), &workflowservice.DescribeNamespaceRequest{Namespace: "kortyx"})
				require.NoError(t, err)
			}
			require.Equal(t, tc.want, gzipCounter.decompressed.Load()-before, "messages decompressed")
		})
	}
}
