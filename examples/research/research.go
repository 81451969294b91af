// Package research is an example of composed agents: the research workflow fans out to three
// runs of the research.topic workflow — background, practice and risks — as Temporal child
// workflows in parallel (hooks.Parallel), then summarizes what they found. The risks child asks
// the human how far to go; its question reaches the client through the root run, and the
// answer goes back down to it. No model is needed: the findings come from a small built-in
// library, so the example runs offline.
package research

import (
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// Workflow ids.
const (
	WorkflowID      = "research"
	TopicWorkflowID = "research.topic"
)

// Angles researched, in order.
var Angles = []string{"background", "practice", "risks"}

// Question is the question of the risks child.
const Question = "Include speculative risks?"

// TopicInput is the input of research.topic.
type TopicInput struct {
	Topic string `json:"topic"`
	Angle string `json:"angle"`
}

// Finding is the output of research.topic.
type Finding struct {
	Angle   string `json:"angle"`
	Summary string `json:"summary"`
	Sources int    `json:"sources"`
}

var (
	topicInput = contracts.MustCompileSchema(`{"type":"object","required":["topic","angle"],"properties":{
		"topic":{"type":"string","minLength":1},"angle":{"enum":["background","practice","risks"]}}}`)
	topicOutput = contracts.MustCompileSchema(`{"type":"object","required":["angle","summary","sources"],"properties":{
		"angle":{"type":"string"},"summary":{"type":"string","minLength":1},"sources":{"type":"integer","minimum":0}}}`)
)

// topic is the typed handle on the child workflow.
var topic = hooks.ChildWorkflow[TopicInput, Finding](TopicWorkflowID)

// Register adds both workflows to reg.
func Register(reg *workflows.Registry) error {
	return reg.Add(
		&workflows.Definition{ID: WorkflowID, Version: "1", Description: "Research a topic from three angles in parallel.",
			Nodes: map[string]workflows.Node{"fanout": {Run: fanout, Children: []string{TopicWorkflowID}}, "summarize": {Run: summarize}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "fanout"}, {From: "fanout", To: "summarize"}}},
		&workflows.Definition{ID: TopicWorkflowID, Version: "1", Description: "Research one angle of a topic.",
			InputSchema: topicInput, OutputSchema: topicOutput,
			Nodes: map[string]workflows.Node{"gather": {Run: gather}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "gather"}}},
	)
}

// fanout calls research.topic once per angle, in parallel, and keeps the findings in order.
func fanout(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	subject := strings.TrimSpace(in.Text())
	if subject == "" {
		return workflows.NodeResult{}, contracts.Errorf(contracts.CodeInvalidInput, "research needs a topic")
	}
	calls := make([]hooks.WorkflowCall, len(Angles))
	for i, a := range Angles {
		calls[i] = topic.With(a, TopicInput{Topic: subject, Angle: a})
	}
	results, err := hooks.Parallel(ctx, calls...)
	if err != nil {
		return workflows.NodeResult{}, err
	}
	findings := make([]any, len(results))
	for i, r := range results {
		f, err := topic.Result(r)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		findings[i] = map[string]any{"angle": f.Angle, "summary": f.Summary, "sources": f.Sources}
	}
	return workflows.NodeResult{Data: map[string]any{"topic": subject, "findings": findings}}, nil
}

// summarize turns the findings into the answer and a structured report.
func summarize(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var args struct {
		Topic    string    `json:"topic"`
		Findings []Finding `json:"findings"`
	}
	if err := in.Decode(&args); err != nil {
		return workflows.NodeResult{}, err
	}
	parts := make([]string, len(args.Findings))
	sources := 0
	for i, f := range args.Findings {
		parts[i] = f.Angle + ": " + f.Summary
		sources += f.Sources
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Research on %s. %s. (%d sources)", args.Topic, strings.Join(parts, ". "), sources)
	return workflows.NodeResult{UI: &workflows.UI{Message: b.String(), Structured: map[string]any{
		"summary": b.String(), "topic": args.Topic, "sources": sources}}}, nil
}

// library is what the example "finds".
var library = map[string]string{
	"background":  "the idea is older than its current popularity",
	"practice":    "teams start small and measure before they scale",
	"risks":       "failures come from unclear ownership and unchecked automation",
	"speculative": "long-term effects on jobs and trust are still unknown",
}

// gather researches one angle: it reports progress as structured data; the risks angle asks
// the human whether to include speculative risks.
func gather(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var args TopicInput
	if err := in.Decode(&args); err != nil {
		return workflows.NodeResult{}, err
	}
	if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "research-progress",
		Data: map[string]any{"angle": args.Angle, "status": "gathering"}}); err != nil {
		return workflows.NodeResult{}, err
	}
	summary, sources := library[args.Angle], 3
	if args.Angle == "risks" {
		choice, err := hooks.Choose(ctx, "speculative", Question,
			contracts.Option{ID: "yes", Label: "Yes, include them"}, contracts.Option{ID: "no", Label: "No, known risks only"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if choice == "yes" {
			summary += "; " + library["speculative"]
			sources++
		}
	}
	return workflows.NodeResult{Data: map[string]any{"angle": args.Angle, "summary": summary, "sources": sources}}, nil
}
