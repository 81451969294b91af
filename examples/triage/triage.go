// Package triage is an example agent: it classifies a support message, streams the ticket it
// drafts as structured data, asks a human to confirm (a choice interrupt), lets them revise the
// summary (a text interrupt) as often as they like, and opens the ticket.
//
// The graph is declared in triage.workflow.yaml; the node functions are Go, registered by name.
package triage

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

//go:embed triage.workflow.yaml
var definition []byte

// WorkflowID is the id of the triage workflow.
const WorkflowID = "triage"

// Ticket is the structured value the agent drafts.
type Ticket struct {
	Title   string   `json:"title"`
	Topic   string   `json:"topic"`
	Summary string   `json:"summary"`
	Tags    []string `json:"tags"`
}

// ticketSchema validates the final ticket before it is shown.
var ticketSchema = contracts.MustCompileSchema(`{
  "type": "object",
  "required": ["title", "topic", "summary", "tags"],
  "properties": {
    "title": {"type": "string", "minLength": 1},
    "topic": {"enum": ["billing", "technical", "account", "general"]},
    "summary": {"type": "string", "minLength": 1},
    "tags": {"type": "array", "items": {"type": "string"}}
  }
}`)

// Register adds the triage workflow and its node functions to reg.
func Register(reg *workflows.Registry) error {
	for name, fn := range map[string]workflows.NodeFunc{
		"triage.classify": classify,
		"triage.draft":    draft,
		"triage.confirm":  confirm,
		"triage.revise":   revise,
		"triage.open":     open,
	} {
		if err := reg.RegisterNode(name, fn); err != nil {
			return err
		}
	}
	def, err := workflows.Load(definition)
	if err != nil {
		return err
	}
	return reg.Add(def)
}

var topics = []struct{ topic, keyword string }{
	{"billing", "bill"}, {"billing", "invoice"}, {"billing", "refund"}, {"billing", "charge"},
	{"technical", "error"}, {"technical", "crash"}, {"technical", "bug"},
	{"account", "password"}, {"account", "login"}, {"account", "access"},
}

// classify picks a topic by keyword and keeps the message.
func classify(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	msg := strings.TrimSpace(in.Text())
	if msg == "" {
		return workflows.NodeResult{}, contracts.Errorf(contracts.CodeInvalidInput, "triage needs a message to classify")
	}
	topic := "general"
	lower := strings.ToLower(msg)
	for _, t := range topics {
		if strings.Contains(lower, t.keyword) {
			topic = t.topic
			break
		}
	}
	return workflows.NodeResult{Data: map[string]any{"message": msg, "topic": topic}}, nil
}

// draft streams the ticket field by field, then publishes the validated whole.
func draft(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var st struct {
		Message string `json:"message"`
		Topic   string `json:"topic"`
		Summary string `json:"summary"`
	}
	if err := in.Decode(&st); err != nil {
		return workflows.NodeResult{}, err
	}
	summary := st.Summary
	if summary == "" {
		summary = st.Message
	}
	t := Ticket{
		Title:   strings.ToUpper(st.Topic[:1]) + st.Topic[1:] + " question",
		Topic:   st.Topic,
		Summary: summary,
		Tags:    []string{st.Topic, "from-chat"},
	}
	stream, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{
		Kind: contracts.StructuredSet, DataType: "ticket", Path: "title", Value: t.Title})
	if err != nil {
		return workflows.NodeResult{}, err
	}
	for _, word := range strings.SplitAfter(t.Summary, " ") {
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{
			Kind: contracts.StructuredTextDelta, StreamID: stream, DataType: "ticket", Path: "summary", Delta: word}); err != nil {
			return workflows.NodeResult{}, err
		}
	}
	items := make([]any, len(t.Tags))
	for i, tag := range t.Tags {
		items[i] = tag
	}
	if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{
		Kind: contracts.StructuredAppend, StreamID: stream, DataType: "ticket", Path: "tags", Items: items}); err != nil {
		return workflows.NodeResult{}, err
	}
	if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{
		StreamID: stream, DataType: "ticket", SchemaID: "ticket", SchemaVersion: "1", Data: t, Schema: ticketSchema}); err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{Data: map[string]any{"ticket": t}}, nil
}

// confirm asks the human what to do with the draft.
func confirm(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var st struct {
		Ticket Ticket `json:"ticket"`
	}
	if err := in.Decode(&st); err != nil {
		return workflows.NodeResult{}, err
	}
	choice, err := hooks.Choose(ctx, "confirm", fmt.Sprintf("Open a %s ticket %q?", st.Ticket.Topic, st.Ticket.Title),
		contracts.Option{ID: "open", Label: "Open the ticket"},
		contracts.Option{ID: "revise", Label: "Revise the summary first"})
	if err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{Condition: choice}, nil
}

// revise asks for a new summary.
func revise(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	summary, err := hooks.AskText(ctx, "summary", "What should the ticket say?")
	if err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{Data: map[string]any{"summary": strings.TrimSpace(summary)}}, nil
}

// open opens the ticket. Its id derives from the run id, so replays and retries agree.
func open(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var st struct {
		Ticket Ticket `json:"ticket"`
	}
	if err := in.Decode(&st); err != nil {
		return workflows.NodeResult{}, err
	}
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	id := "T-" + strings.ToUpper(runID[max(0, len(runID)-6):])
	return workflows.NodeResult{
		Data: map[string]any{"ticketId": id},
		UI:   &workflows.UI{Message: fmt.Sprintf("Opened %s ticket %s: %s", st.Ticket.Topic, id, st.Ticket.Summary)},
	}, nil
}
