package integration_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dev-mode worker's chat page links to the embedded server's Temporal UI on the port it
// runs on (KORTYX_DEV_UI_PORT), and shows no links when the UI is disabled; the log names the
// page's URL.
func TestDevModeChatPageLinksTheDevServerUI(t *testing.T) {
	uiPort := func() string {
		_, port, err := net.SplitHostPort(freeAddr(t))
		require.NoError(t, err)
		return port
	}()
	for name, c := range map[string]struct{ uiPort, want, otel string }{
		"ui on another port": {uiPort, "http://127.0.0.1:" + uiPort, ""},
		// The program's OTEL_* are its own: the dev server does not inherit them (it would exit
		// on "unsupported OTEL exporter").
		"ui disabled, traces to the console": {"-1", "", "console"},
	} {
		t.Run(name, func(t *testing.T) {
			p := startProcess(t, taskQueue(t), nil, "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath,
				"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT="+c.uiPort, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_TEMPORAL_UI_URL=",
				"OTEL_TRACES_EXPORTER="+c.otel, "KORTYX_WEB_PAGE=")
			base := p.apiURL(t)
			// The dev log names the chat page's URL.
			require.Equal(t, base+"/", logAttr(p.until(t, `msg="kortyx worker: chat page"`), "url"))
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
