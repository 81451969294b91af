package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/require"
)

// composeService is the part of a service of `docker-compose config` that the programs read.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Restart   string                       `yaml:"restart"`
	DependsOn map[string]map[string]string `yaml:"depends_on"`
	Profiles  []string                     `yaml:"profiles"`
	Volumes   []string                     `yaml:"volumes"` // docker-compose 1.x: "source:target:mode"
}

// docker-compose.yml, as docker-compose resolves it with .env.example, starts the roles the
// way TestProcessRoles starts them: the worker with no KORTYX_HTTP_ADDR and its health on
// KORTYX_HEALTH_ADDR, the API with --api-only on KORTYX_HTTP_ADDR, each probed by the image's
// binary on its own port; every variable it sets is one docs/running.md documents; no secret
// has a value in the committed files. Its Temporal server and UI images are the versions the
// tests run (the CLI's own server and UI); auto-setup creates TEMPORAL_NAMESPACE; the worker
// gets every provider's key, KORTYX_MODEL and a volume at KORTYX_WORKFLOWS; the API process does
// not serve the chat page (it lists every session without authentication).
func TestComposeFileStartsTheRoles(t *testing.T) {
	out, err := exec.Command("docker-compose", "--project-directory", root, "-f", filepath.Join(root, "docker-compose.yml"),
		"--env-file", filepath.Join(root, ".env.example"), "config").Output()
	require.NoError(t, err, "docker-compose config (the Debian package docker-compose; .ci/run installs it)")
	var cfg struct {
		Services map[string]composeService `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(out, &cfg))

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	bin := regexp.MustCompile(`ENTRYPOINT \["([^"]+)"\]`).FindStringSubmatch(string(dockerfile))
	require.NotNil(t, bin, "the Dockerfile's ENTRYPOINT")
	require.Contains(t, string(dockerfile), "CGO_ENABLED=0")
	require.Contains(t, string(dockerfile), "USER nonroot")
	require.Contains(t, string(dockerfile), "ARG KORTYX_BUILD_TAGS=\"\"\n")
	require.Contains(t, string(dockerfile), `go build -trimpath -tags "$KORTYX_BUILD_TAGS" `, "docs/running.md, Providers linked")

	port := func(addr string) string {
		require.True(t, strings.HasPrefix(addr, ":"), "listens on every interface of the container: %q", addr)
		return addr[1:]
	}
	worker, api := cfg.Services["worker"], cfg.Services["api"]
	require.Empty(t, worker.Command, "the worker role is the default")
	require.NotContains(t, worker.Environment, "KORTYX_HTTP_ADDR", "a worker serves no API")
	require.Equal(t, []string{"CMD", bin[1], "--probe", "http://127.0.0.1:" + port(worker.Environment["KORTYX_HEALTH_ADDR"]) + "/readyz"}, worker.Healthcheck.Test)
	require.Equal(t, []string{"--api-only"}, api.Command)
	require.Equal(t, []string{"CMD", bin[1], "--probe", "http://127.0.0.1:" + port(api.Environment["KORTYX_HTTP_ADDR"]) + "/readyz"}, api.Healthcheck.Test)
	for name, s := range map[string]composeService{"worker": worker, "api": api} {
		require.Equal(t, worker.Image, s.Image, "one image")
		require.Equal(t, "temporal:7233", s.Environment["TEMPORAL_ADDRESS"], name)
		require.Equal(t, "redis://redis:6379/0", s.Environment["KORTYX_REDIS_URL"], name)
		require.Equal(t, map[string]map[string]string{"temporal": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}, s.DependsOn, name)
	}

	docs, err := os.ReadFile(filepath.Join(root, "docs", "running.md"))
	require.NoError(t, err)
	for name, s := range cfg.Services {
		require.Equal(t, "unless-stopped", s.Restart, name)
		if name != "worker" && name != "api" {
			continue
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, "KORTYX_") || strings.HasPrefix(k, "TEMPORAL_") {
				require.Contains(t, string(docs), "`"+k+"`", "docs/running.md documents %s", k)
			}
		}
	}
	// The versions the tests run: "temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)".
	version, err := exec.Command(tcliPath, "--version").Output()
	require.NoError(t, err)
	tested := regexp.MustCompile(`\(Server ([0-9.]+), UI ([0-9.]+)\)`).FindStringSubmatch(string(version))
	require.NotNil(t, tested, "%s", version)
	require.Equal(t, "temporalio/auto-setup:"+tested[1], cfg.Services["temporal"].Image, "the server version the tests run")
	require.Equal(t, "temporalio/ui:"+tested[2], cfg.Services["temporal-ui"].Image, "the UI version the tests run")
	require.Equal(t, worker.Environment["TEMPORAL_NAMESPACE"], cfg.Services["temporal"].Environment["DEFAULT_NAMESPACE"], "auto-setup creates the namespace")
	require.Equal(t, worker.Environment["TEMPORAL_NAMESPACE"], cfg.Services["temporal-ui"].Environment["TEMPORAL_DEFAULT_NAMESPACE"])

	// The worker calls the models and loads the workflow files; the API process neither.
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "KORTYX_MODEL"} {
		require.Contains(t, worker.Environment, k)
		require.NotContains(t, api.Environment, k)
	}
	require.Len(t, worker.Volumes, 1)
	vol := strings.Split(worker.Volumes[0], ":")
	require.Equal(t, []string{filepath.Join(root, "deploy", "workflows"), worker.Environment["KORTYX_WORKFLOWS"], "ro"}, vol)
	require.DirExists(t, vol[0])
	require.NotContains(t, api.Environment, "KORTYX_WORKFLOWS")
	require.Equal(t, "false", api.Environment["KORTYX_WEB_PAGE"], "the API process serves no chat page unless asked")
	require.NotContains(t, worker.Environment, "KORTYX_WEB_PAGE", "the worker serves no HTTP API")

	require.Equal(t, []string{"tracing"}, cfg.Services["jaeger"].Profiles)
	require.Equal(t, []string{"redis-server", "--appendonly", "yes"}, cfg.Services["redis"].Command)

	env, err := os.ReadFile(filepath.Join(root, ".env.example"))
	require.NoError(t, err)
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"} {
		require.Regexp(t, `(?m)^`+k+`=$`, string(env), "no key in the committed example")
	}
	for _, v := range []string{"TEMPORAL_VERSION=" + tested[1], "TEMPORAL_UI_VERSION=" + tested[2], "KORTYX_WEB_PAGE=false"} {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(v)+`$`, string(env))
	}
	compose, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	require.NotContains(t, string(compose), "change-me", "the password comes from .env")
}
