package integration_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noProviderEnv clears every provider variable and KORTYX_FAKE_MODELS.
var noProviderEnv = []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "GEMINI_API_KEY=",
	"GOOGLE_API_KEY=", "GOOGLE_GEMINI_BASE_URL=", "GOOGLE_GENAI_USE_VERTEXAI=", "KORTYX_MODEL=", "KORTYX_FAKE_MODELS="}

// Issue 19 item 9: a worker outside dev mode with no provider configured does not start; it
// says which variables to set.
func TestWorkerWithoutProviderDoesNotStart(t *testing.T) {
	bin := binary(t, "worker")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // it ends at once; a worker that starts polls until killed
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+taskQueue(t), "KORTYX_HTTP_ADDR=",
		"KORTYX_HEALTH_ADDR=", "KORTYX_WORKER_POLL=", "KORTYX_LOG_FORMAT=", "KORTYX_LOG_LEVEL="), noProviderEnv...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "the worker was still running after 2 minutes; log:\n%s", out.String())
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v; log:\n%s", err, out.String())
	require.Equal(t, 1, ee.ExitCode())
	require.Equal(t, "kortyx: no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL (openai); "+
		"or GEMINI_API_KEY or GOOGLE_API_KEY or GOOGLE_GEMINI_BASE_URL or GOOGLE_GENAI_USE_VERTEXAI (google), "+
		"Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true and GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION; "+
		"or ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL (anthropic). "+
		"To answer from the scripted fake model instead (tests, demos), set KORTYX_FAKE_MODELS=1\n", errOut.String())
	require.NotContains(t, out.String(), "polling task queue")
}

// The worker built with -tags kortyx_openaionly (no Anthropic or Google SDK) refuses a variable
// of a provider it does not link, by name, instead of ignoring it; without one it says, in the
// error of a worker with no provider, where the other two are served.
func TestOpenAIOnlyWorkerRefusesOtherProviders(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "worker")
	build := exec.Command("go", "build", "-tags", "kortyx_openaionly", "-o", bin, "./worker")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	run := func(env ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+taskQueue(t), "KORTYX_HTTP_ADDR=",
			"KORTYX_HEALTH_ADDR=", "KORTYX_WORKER_POLL=", "KORTYX_LOG_FORMAT=", "KORTYX_LOG_LEVEL="), append(noProviderEnv, env...)...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		require.NoError(t, ctx.Err(), "the worker was still running after 2 minutes")
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v", err)
		return ee.ExitCode(), errOut.String()
	}
	code, msg := run("ANTHROPIC_API_KEY=a-key")
	require.Equal(t, 1, code)
	require.Equal(t, "kortyx worker: ANTHROPIC_API_KEY is set, but this worker was built with -tags kortyx_openaionly and links the OpenAI wire alone, "+
		"not the anthropic provider: build it without the tag (go build ./worker), or unset ANTHROPIC_API_KEY\n", msg)
	code, msg = run()
	require.Equal(t, 1, code)
	require.Equal(t, "kortyx: no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL (openai); "+
		"or GEMINI_API_KEY or GOOGLE_API_KEY or GOOGLE_GEMINI_BASE_URL or GOOGLE_GENAI_USE_VERTEXAI (google), in a worker built without -tags kortyx_openaionly; "+
		"or ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL (anthropic), in a worker built without -tags kortyx_openaionly. "+
		"To answer from the scripted fake model instead (tests, demos), set KORTYX_FAKE_MODELS=1\n", msg)

	// With none of their variables and KORTYX_FAKE_MODELS=1, the fake model answers under their
	// ids, as in the default build.
	p := startBinary(t, bin, taskQueue(t), nil, append(noProviderEnv, "KORTYX_FAKE_MODELS=1")...)
	for _, id := range []string{"openai", "google", "anthropic"} {
		line := p.until(t, `msg="kortyx worker: provider" provider=`+id+" ")
		require.Contains(t, line, ` level=WARN msg="kortyx worker: provider" provider=`+id+` reaches="the in-process scripted model" env="" fake=true`)
	}
	p.until(t, `msg="kortyx worker: polling task queue"`)
}

// With KORTYX_FAKE_MODELS=1 it starts with the in-process fake model standing in for each
// provider, said at WARN once and for each provider; a worker that polls workflow tasks only
// runs no model and starts without any.
func TestWorkerWithFakeModelsWarns(t *testing.T) {
	p := startProcess(t, taskQueue(t), nil, append(noProviderEnv, "KORTYX_FAKE_MODELS=1")...)
	line := p.until(t, `KORTYX_FAKE_MODELS=1: every model provider`)
	require.Contains(t, line, ` level=WARN msg="kortyx worker: KORTYX_FAKE_MODELS=1: every model provider without its variables answers from the in-process scripted fake model; for tests and demos only"`)
	line = p.until(t, `msg="kortyx worker: models"`)
	require.Contains(t, line, ` models="the scripted fake model (no OPENAI_API_KEY or OPENAI_BASE_URL set), in process"`)
	for _, id := range []string{"openai", "google", "anthropic"} {
		line := p.until(t, `msg="kortyx worker: provider" provider=`+id+" ")
		require.Contains(t, line, ` level=WARN msg="kortyx worker: provider" provider=`+id+` reaches="the in-process scripted model" env="" fake=true`)
	}
	line = p.until(t, `msg="kortyx worker: provider" provider=fake `)
	require.Contains(t, line, ` level=INFO msg="kortyx worker: provider" provider=fake reaches="the in-process scripted model" env="" fake=true`)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	wf := startProcess(t, taskQueue(t), []string{"--poll", "workflows"}, noProviderEnv...)
	line = wf.until(t, `msg="kortyx worker: provider" provider=fake `)
	require.Contains(t, line, " level=INFO ")
	wf.until(t, `msg="kortyx worker: polling task queue"`)
}

// In dev mode the in-process fake model answers for the providers without a key, without
// being asked for, logged at INFO.
func TestDevWorkerLogsItsFakes(t *testing.T) {
	p := startProcess(t, taskQueue(t), nil, append(noProviderEnv, "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath,
		"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT=-1", "KORTYX_HTTP_ADDR=127.0.0.1:0")...)
	line := p.until(t, `msg="kortyx worker: provider" provider=openai `)
	require.Contains(t, line, ` level=INFO msg="kortyx worker: provider" provider=openai reaches="the in-process scripted model" env="" fake=true`)
	line = p.until(t, `msg="kortyx worker: provider" provider=fake `)
	require.Contains(t, line, ` level=INFO msg="kortyx worker: provider" provider=fake reaches="the in-process scripted model" env="" fake=true`)
	p.until(t, `msg="kortyx worker: polling task queue"`)
}
