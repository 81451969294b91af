package hello_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

func TestHello(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{})

	// When the run asks for the name, answer it by signal.
	env.OnQuestion("name", kortyxtest.Text("Ada"))
	_, err := env.Run("hello", "")
	require.NoError(t, err)

	var got []string
	for _, c := range env.Chunks() {
		got = append(got, string(c.Type)+" "+c.Content)
	}
	require.Equal(t, []string{"interrupt ", "done ", "message Hello, Ada!", "done "}, got)
}
