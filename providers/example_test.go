package providers_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Shout is a provider of its own: it answers the last message in capitals, one word per delta.
type Shout struct{}

// ID names the provider in model references ({"provider": "shout"}).
func (Shout) ID() string { return "shout" }

// Generate runs one model pass.
func (Shout) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	if len(req.Messages) == 0 {
		return providers.Response{}, contracts.Errorf(contracts.CodeProviderInvalidResponse, "shout: nothing to answer")
	}
	text := strings.ToUpper(req.Messages[len(req.Messages)-1].Content)
	if onDelta != nil {
		for _, w := range strings.SplitAfter(text, " ") {
			if err := onDelta(w); err != nil {
				return providers.Response{}, err
			}
		}
	}
	return providers.Response{Text: text, FinishReason: providers.FinishReason{Unified: providers.FinishStop}}, nil
}

// A worker knows its providers by id; an unknown id is a PROVIDER_CONFIGURATION error that
// names the registered ones.
func Example() {
	models := providers.NewSet(Shout{}, fake.New(fake.Text("hi")))
	fmt.Println(models.IDs())

	p, err := models.Get("shout")
	if err != nil {
		panic(err)
	}
	req := providers.Request{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
	res, err := p.Generate(context.Background(), req, func(delta string) error {
		fmt.Printf("delta %q\n", delta)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)

	_, err = models.Get("anthropic")
	fmt.Println(contracts.CodeOf(err))
	// Output:
	// [fake shout]
	// delta "HELLO "
	// delta "THERE"
	// HELLO THERE
	// PROVIDER_CONFIGURATION
}
