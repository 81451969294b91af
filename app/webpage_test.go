package app

import "testing"

func TestTemporalUI(t *testing.T) {
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "")
	for in, want := range map[string]string{"": "http://127.0.0.1:8233", "none": "", "https://ui.example": "https://ui.example"} {
		if got := temporalUI(in); got != want {
			t.Errorf("temporalUI(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "none")
	if got := temporalUI(""); got != "" {
		t.Errorf("KORTYX_TEMPORAL_UI_URL=none: %q, want no links", got)
	}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "http://ui:8080")
	if got := temporalUI(""); got != "http://ui:8080" {
		t.Errorf("KORTYX_TEMPORAL_UI_URL=http://ui:8080: %q", got)
	}
}
