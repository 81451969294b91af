package codec

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// DefaultGrace is how old an unreferenced object must be before [Collect] deletes it when
// [CollectOptions.Grace] is 0.
const DefaultGrace = time.Hour

// CollectOptions configure [Collect].
type CollectOptions struct {
	// Namespace is the Temporal namespace whose workflows reference the store ("": "default").
	Namespace string
	// Grace keeps every object stored (or stored again) less than Grace before the collection
	// started, referenced or not (0: [DefaultGrace]): a payload being written now, by a run that
	// Temporal does not list yet, survives.
	Grace time.Duration
	// DryRun deletes nothing and reports what would be deleted.
	DryRun bool
}

// CollectResult is what [Collect] found and did.
type CollectResult struct {
	// Executions is the number of workflow executions whose histories were read.
	Executions int `json:"executions"`
	// Referenced are the stored objects some history references; Fresh the unreferenced ones
	// younger than the grace period; Deleted the others (with DryRun: those it would delete).
	Referenced []Object `json:"referenced"`
	Fresh      []Object `json:"fresh"`
	Deleted    []Object `json:"deleted"`
}

// refPattern finds the hashes of this codec in decoded payload data (claim-check references
// and the message prefixes of model-pass inputs and results and of prefix nodes).
var refPattern = regexp.MustCompile(hashExpr)

// Collect garbage-collects the codec's payload store (mark and sweep): it lists every workflow
// execution Temporal still keeps in the namespace (open ones, and closed ones within the
// namespace's retention), reads each history, decodes every payload with the codec and marks
// every hash it finds — claim-check references, and the message prefixes of model passes
// (also inside snapshots and checkpoints, which travel in payloads), with every hash named
// inside the bytes stored under a marked hash (a prefix node names the node before it), read
// from the store — then deletes every stored
// object that is not marked and was last stored before now − Grace.
//
// A history that references a hash the store lost is read on (the hash is marked; nothing is
// deleted because of it). Any other error (Temporal or the store unreachable, a payload the
// codec cannot decode) stops the collection before anything is deleted — deleting with an
// incomplete mark would lose payloads that runs still need.
func Collect(ctx context.Context, c client.Client, cd *Codec, o CollectOptions) (CollectResult, error) {
	var res CollectResult
	if !cd.HasStore() {
		return res, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: no payload store to collect; set KORTYX_PAYLOAD_STORE")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	cutoff := time.Now().Add(-o.Grace)
	marked := map[string]bool{}
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: o.Namespace, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return res, &contracts.Error{Code: contracts.CodeTemporalUnavailable, Message: "kortyx codec: listing the workflows failed; nothing was deleted", Err: err}
		}
		for _, ex := range page.GetExecutions() {
			if err := markHistory(ctx, c, cd, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId(), marked); err != nil {
				return res, err
			}
			res.Executions++
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var objs []Object
	if err := cd.store.List(ctx, func(ob Object) error { objs = append(objs, ob); return nil }); err != nil {
		return res, err
	}
	for _, ob := range objs {
		switch {
		case marked[ob.Hash]:
			res.Referenced = append(res.Referenced, ob)
		case ob.ModTime.After(cutoff):
			res.Fresh = append(res.Fresh, ob)
		case o.DryRun:
			res.Deleted = append(res.Deleted, ob)
		default:
			ok, err := cd.store.Delete(ctx, ob.Hash, cutoff)
			if err != nil {
				return res, err
			}
			if ok {
				res.Deleted = append(res.Deleted, ob)
			} else {
				res.Fresh = append(res.Fresh, ob) // stored again meanwhile
			}
		}
	}
	return res, nil
}

// markHistory marks every hash the history of one execution references.
func markHistory(ctx context.Context, c client.Client, cd *Codec, id, runID string, marked map[string]bool) error {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			if isNotFound(err) {
				return nil // deleted since it was listed: it references nothing any more
			}
			return &contracts.Error{Code: contracts.CodeTemporalUnavailable, Message: "kortyx codec: reading the history of " + id + " failed; nothing was deleted", Err: err}
		}
		err = proxy.VisitPayloads(ctx, ev, proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
				for _, p := range ps {
					if err := cd.mark(p, marked); err != nil {
						return nil, err
					}
				}
				return ps, nil
			},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// mark marks the hashes p references, through every layer of the codec.
func (c *Codec) mark(p *commonpb.Payload, marked map[string]bool) error {
	for range maxLayers + 1 {
		if p == nil {
			return nil
		}
		if string(p.GetMetadata()[converter.MetadataEncoding]) == encodingRef {
			marked[string(p.GetData())] = true
		}
		switch string(p.GetMetadata()[converter.MetadataEncoding]) {
		case encodingRef, encodingAESGCM, encodingGzip:
			next, err := c.decodeLayer(p)
			if contracts.CodeOf(err) == contracts.CodePayloadMissing {
				return nil
			}
			if err != nil {
				return err
			}
			p = next
		default:
			return c.markFound(p.GetData(), marked)
		}
	}
	return nil
}

// markFound marks the hashes found in data and, transitively, those found in what is stored
// under them (a node of a model pass's message prefix, kept by [Codec.StoreBytes], names the
// node before it only inside itself). Each hash is read once; one the store does not have, or
// that this codec cannot open, is marked and read no further. Only a store that fails stops
// the collection.
func (c *Codec) markFound(data []byte, marked map[string]bool) error {
	todo := refPattern.FindAll(data, -1)
	for len(todo) > 0 {
		h := string(todo[len(todo)-1])
		todo = todo[:len(todo)-1]
		if marked[h] {
			continue
		}
		marked[h] = true
		p, err := c.decodeOne(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingRef)}, Data: []byte(h)})
		if contracts.CodeOf(err) == contracts.CodePersistenceError {
			return err
		}
		if err == nil {
			todo = append(todo, refPattern.FindAll(p.GetData(), -1)...)
		}
	}
	return nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
