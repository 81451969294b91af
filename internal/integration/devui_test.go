package integration_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dev-mode worker's chat page links to the embedded server's Temporal UI on the port it
// runs on (KORTYX_DEV_UI_PORT), and shows no links when the UI is disabled.
func TestDevModeChatPageLinksTheDevServerUI(t *testing.T) {
	uiPort := func() string {
		_, port, err := net.SplitHostPort(freeAddr(t))
		require.NoError(t, err)
		return port
	}()
	for name, c := range map[string]struct{ uiPort, want string }{
		"ui on another port": {uiPort, "http://127.0.0.1:" + uiPort},
		"ui disabled":        {"-1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := startProcess(t, taskQueue(t), nil, "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath,
				"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT="+c.uiPort, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_TEMPORAL_UI_URL=", "KORTYX_STICKY_CACHE=")
			base := p.apiURL(t)
			require.Equal(t, "200", logAttr(p.until(t, `msg="kortyx worker: polling task queue"`), "sticky_cache"),
				"dev mode bounds the sticky cache (app.DefaultDevStickyCacheSize)")
			resp, err := http.Get(base + "/api/config")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var got map[string]string
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			require.Equal(t, map[string]string{"temporalUiUrl": c.want, "namespace": "default"}, got)
		})
	}
}
